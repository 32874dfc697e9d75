'use strict';

const text = require('./text');
const list = require('./list');

module.exports = { ...text, ...list };
