'use strict';

const test = require('node:test');
const assert = require('node:assert');

const { slugify, wordCount, truncate, capitalize } = require('../src');

test('slugify lower-cases and joins words with dashes', () => {
  assert.strictEqual(slugify('Hello, World!'), 'hello-world');
  assert.strictEqual(slugify('  Crème brûlée  '), 'creme-brulee');
  assert.strictEqual(slugify('--a--b--'), 'a-b');
  assert.strictEqual(slugify(''), '');
});

test('wordCount counts runs of non-whitespace', () => {
  assert.strictEqual(wordCount('one two  three'), 3);
  assert.strictEqual(wordCount('\tone\ntwo '), 2);
  assert.strictEqual(wordCount('   '), 0);
  assert.strictEqual(wordCount(''), 0);
});

test('truncate keeps short strings and marks cuts', () => {
  assert.strictEqual(truncate('short', 10), 'short');
  assert.strictEqual(truncate('exactly', 7), 'exactly');
  assert.strictEqual(truncate('a longer sentence', 8), 'a longe\u2026');
  assert.throws(() => truncate('x', 0), RangeError);
});

test('capitalize upper-cases the first character only', () => {
  assert.strictEqual(capitalize('hello world'), 'Hello world');
  assert.strictEqual(capitalize(''), '');
});
