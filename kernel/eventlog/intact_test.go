package eventlog

import (
	"bytes"
	"testing"
)

// Intact keeps exactly the events a writer's Open keeps, so a reader can
// replay a log whose tail the next Append will repair.
func TestIntact(t *testing.T) {
	_, raw := newLog(t, testBinding, 3)
	for _, tc := range []struct {
		name    string
		log     []byte
		want    []byte
		damaged bool
	}{
		{"clean", raw, raw, false},
		{"torn", append(bytes.Clone(raw), `{"contract":"sha256:cc`...), raw, true},
		{"torn repair torn", append(bytes.Clone(raw), "{\"contract\":\n{\"contract\":\"sha2"...), raw, true},
		{"whole line without newline", raw[:len(raw)-1], raw, true},
		{"malformed middle line", append(append(bytes.Clone(splitLines(raw)[0]), "garbage\n"...), raw[len(splitLines(raw)[0]):]...), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, damaged := Intact(tc.log)
			if damaged != tc.damaged {
				t.Fatalf("damaged %v, want %v", damaged, tc.damaged)
			}
			want := tc.want
			if want == nil {
				want = tc.log
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Intact kept %q, want %q", got, want)
			}
			if _, err := Read(bytes.NewReader(got), nil); damaged && err != nil {
				t.Fatalf("the intact part does not verify: %v", err)
			}
		})
	}
}
