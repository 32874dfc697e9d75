'use strict';

const test = require('node:test');
const assert = require('node:assert');

const { unique, chunk } = require('../src');

test('unique keeps the first of each item, in order', () => {
  assert.deepStrictEqual(unique([3, 1, 3, 2, 1]), [3, 1, 2]);
  assert.deepStrictEqual(unique([]), []);
});

test('chunk splits into runs of n', () => {
  assert.deepStrictEqual(chunk([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
  assert.deepStrictEqual(chunk([], 3), []);
  assert.throws(() => chunk([1], 0), RangeError);
});
