// Package quickstart is the tiny module the README's quick start verifies.
package quickstart

// Greet returns a greeting for name.
func Greet(name string) string { return "hello, " + name }
