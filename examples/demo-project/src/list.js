'use strict';

// List helpers.

/** The distinct items of a, in their first order. */
function unique(a) {
  return [...new Set(a)];
}

/** a split into consecutive chunks of size n (the last may be shorter). */
function chunk(a, n) {
  if (!Number.isInteger(n) || n < 1) {
    throw new RangeError('n must be a positive integer');
  }
  const out = [];
  for (let i = 0; i < a.length; i += n) {
    out.push(a.slice(i, i + n));
  }
  return out;
}

module.exports = { unique, chunk };
