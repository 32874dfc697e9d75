'use strict';

// Text helpers: pure functions of their arguments, no I/O.

/** Lower-case ASCII slug: runs of anything but letters and digits become one '-'. */
function slugify(s) {
  return String(s)
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/** The number of words: runs of non-whitespace. */
function wordCount(s) {
  const words = String(s).trim().split(/\s+/);
  return words[0] === '' ? 0 : words.length;
}

/** s cut to at most max characters, the cut marked with an ellipsis. */
function truncate(s, max) {
  s = String(s);
  if (!Number.isInteger(max) || max < 1) {
    throw new RangeError('max must be a positive integer');
  }
  if (s.length <= max) {
    return s;
  }
  return s.slice(0, max - 1) + '\u2026';
}

/** s with its first character upper-cased. */
function capitalize(s) {
  s = String(s);
  return s.charAt(0).toUpperCase() + s.slice(1);
}

module.exports = { slugify, wordCount, truncate, capitalize };
