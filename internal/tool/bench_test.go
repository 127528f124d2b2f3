package tool

import "testing"

func BenchmarkRender(b *testing.B) {
	r, err := contractFor(tools)
	if err != nil {
		b.Fatal(err)
	}
	scale, _ := r.Tool("scale")
	args := []byte(`{"force":false,"n":-42,"note":"a note","env":"staging"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Render(scale, args); err != nil {
			b.Fatal(err)
		}
	}
}
