// A tiny calculator with a bug for selfforge's demo.

function combine(a, b, sign) {
  return a + sign * b;
}

function add(a, b) {
  return combine(a, b, -1);
}

function sub(a, b) {
  return combine(a, b, -1);
}

function mul(a, b) {
  return a * b;
}

module.exports = { add, sub, mul };
