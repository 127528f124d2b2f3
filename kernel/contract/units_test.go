package contract

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"10m": 10 * time.Minute, "1h30m": 90 * time.Minute, "500ms": 500 * time.Millisecond,
		"0": 0, "0s": 0, "1.5s": 1500 * time.Millisecond, "2h": 2 * time.Hour,
	}
	for s, want := range good {
		d, err := ParseDuration(s)
		if err != nil || time.Duration(d) != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", s, d, err, want)
		}
	}
	for _, s := range []string{"", "10", "10 minutes", "-5m", "+5m", "1d", "9999999999h", "m", "1h" + strings.Repeat("0", 40) + "s", "NaN"} {
		if d, err := ParseDuration(s); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want error", s, d)
		} else if !strings.Contains(err.Error(), "is not a duration") {
			t.Errorf("ParseDuration(%q): %v", s, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	good := map[string]Size{
		"1MiB": 1 << 20, "512KiB": 512 << 10, "2GiB": 2 << 30, "1TiB": 1 << 40,
		"1KB": 1000, "1MB": 1_000_000, "2GB": 2_000_000_000, "1TB": 1_000_000_000_000,
		"4096": 4096, "4096B": 4096, "0": 0, "1.5KiB": 1536, "0.5MB": 500_000,
	}
	for s, want := range good {
		v, err := ParseSize(s)
		if err != nil || v != want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", s, v, err, want)
		}
	}
	for _, s := range []string{
		"", "-1", "-1MiB", "+1MiB", "1 MiB", "1mib", "1Mi", "1KIB", "1e3", "0.5B", "1.0001KB", "1.", ".5MiB",
		"1..5MiB", "1.2.3MB", "2TiB", "1099511627777", "99999999999999999999999999999", "1TiB1",
		"0x10", "1_000",
	} {
		if v, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) = %v, want error", s, v)
		}
	}
}

func TestUnitJSON(t *testing.T) {
	b, _ := json.Marshal(struct {
		D Duration
		S Size
		M Milli
	}{Duration(90 * time.Second), 1 << 20, 500})
	if string(b) != `{"D":"1m30s","S":1048576,"M":500}` {
		t.Fatalf("marshal: %s", b)
	}
	var s Size
	for in, want := range map[string]Size{`"1MiB"`: 1 << 20, `1048576`: 1 << 20, `1e3`: 1000, `"512KiB"`: 512 << 10} {
		if err := json.Unmarshal([]byte(in), &s); err != nil || s != want {
			t.Errorf("Size %s = %v, %v", in, s, err)
		}
	}
	for _, in := range []string{`-1`, `1.5`, `"1 MiB"`, `1e999999999`, `2199023255552`, `true`, `null`, `"2TiB"`} {
		if err := json.Unmarshal([]byte(in), &s); err == nil && in != "null" {
			t.Errorf("Size %s accepted as %v", in, s)
		}
	}
	var d Duration
	if err := json.Unmarshal([]byte(`"10m0s"`), &d); err != nil || d != Duration(10*time.Minute) {
		t.Errorf("Duration: %v %v", d, err)
	}
	for _, in := range []string{`600`, `"10 minutes"`, `"-1s"`} {
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("Duration %s accepted", in)
		}
	}
	var m Milli
	if err := json.Unmarshal([]byte(`1500`), &m); err != nil || m != 1500 {
		t.Errorf("Milli: %v %v", m, err)
	}
	if err := json.Unmarshal([]byte(`1.5`), &m); err == nil {
		t.Error("Milli 1.5 accepted")
	}
}

func TestParseCPUs(t *testing.T) {
	for in, want := range map[string]Milli{"2": 2000, "0.5": 500, "0.001": 1, "1024": 1024000, "1.25": 1250, "2.0": 2000, "5e-1": 500} {
		if m, err := parseCPUs(in); err != nil || m != want {
			t.Errorf("parseCPUs(%s) = %v, %v; want %v", in, m, err, want)
		}
	}
	for _, in := range []string{"0", "-1", "0.0005", "1025", "1e999999999", "abc", "1/2"} {
		if m, err := parseCPUs(in); err == nil {
			t.Errorf("parseCPUs(%s) = %v", in, m)
		}
	}
}
