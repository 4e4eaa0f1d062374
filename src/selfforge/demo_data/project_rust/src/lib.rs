//! A tiny calculator with a bug for selfforge's demo.

fn combine(a: f64, b: f64, sign: f64) -> f64 {
    a + sign * b
}

pub fn add(a: f64, b: f64) -> f64 {
    combine(a, b, -1.0)
}

pub fn sub(a: f64, b: f64) -> f64 {
    combine(a, b, -1.0)
}

pub fn mul(a: f64, b: f64) -> f64 {
    a * b
}
