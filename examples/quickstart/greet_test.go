package quickstart

import "testing"

func TestGreet(t *testing.T) {
	if got := Greet("proofgate"); got != "hello, proofgate" {
		t.Fatalf("Greet = %q", got)
	}
}
