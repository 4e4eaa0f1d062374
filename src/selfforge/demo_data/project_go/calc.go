// Package calc is a tiny calculator with a bug for selfforge's demo.
package calc

func combine(a, b float64, sign float64) float64 {
	return a + sign*b
}

func Add(a, b float64) float64 {
	return combine(a, b, -1)
}

func Sub(a, b float64) float64 {
	return combine(a, b, -1)
}

func Mul(a, b float64) float64 {
	return a * b
}
