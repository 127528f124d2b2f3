package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/proofgate/proofgate/internal/strictjson"
)

// MaxSize is the largest Size a contract may declare: 1 TiB.
const MaxSize Size = 1 << 40

// maxUnitText bounds the length of a duration or size string.
const maxUnitText = 32

// ParseDuration parses a Go duration string ("10m", "1h30m", "500ms", "0").
// Signs are refused: a contract duration is never negative.
func ParseDuration(s string) (Duration, error) {
	if s == "" || len(s) > maxUnitText || s[0] == '-' || s[0] == '+' {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return Duration(d), nil
}

// String returns the Go duration string, e.g. "10m0s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := strictjson.Decode(b, &s); err != nil {
		return fmt.Errorf("duration must be a string: %w", err)
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

var sizeUnits = map[string]int64{
	"":    1,
	"B":   1,
	"KB":  1000,
	"MB":  1000 * 1000,
	"GB":  1000 * 1000 * 1000,
	"TB":  1000 * 1000 * 1000 * 1000,
	"KiB": 1 << 10,
	"MiB": 1 << 20,
	"GiB": 1 << 30,
	"TiB": 1 << 40,
}

// ParseSize parses a byte count: digits with an optional decimal fraction
// and an optional unit B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB,
// TiB (powers of 1024), e.g. "1MiB", "512KiB", "1.5GB", "4096". The result
// must be a whole number of bytes between 0 and MaxSize; signs, exponents,
// spaces and unknown units are refused.
func ParseSize(s string) (Size, error) {
	bad := func(why string) (Size, error) {
		if why == "" {
			return 0, fmt.Errorf("%q is not a size", s)
		}
		return 0, fmt.Errorf("%q is not a size: %s", s, why)
	}
	if s == "" || len(s) > maxUnitText {
		return bad("")
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], s[i:]
	mult, ok := sizeUnits[unit]
	if !ok {
		return bad("unknown unit (want B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)")
	}
	whole, frac, hasDot := strings.Cut(num, ".")
	if whole == "" || (hasDot && frac == "") || strings.Contains(frac, ".") {
		return bad("")
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return bad("")
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return bad("not a whole number of bytes")
	}
	if r.Num().Cmp(big.NewInt(int64(MaxSize))) > 0 {
		return bad("larger than 1TiB")
	}
	return Size(r.Num().Int64()), nil
}

// MarshalJSON writes the size as an integer number of bytes.
func (s Size) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatInt(int64(s), 10)), nil
}

// UnmarshalJSON reads an integer number of bytes or a size string ("1MiB").
func (s *Size) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var str string
		if err := strictjson.Decode(b, &str); err != nil {
			return err
		}
		v, err := ParseSize(str)
		if err != nil {
			return err
		}
		*s = v
		return nil
	}
	v, err := sizeFromNumber(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// sizeFromNumber accepts a JSON number that is a whole count of bytes.
func sizeFromNumber(n string) (Size, error) {
	if len(n) > maxUnitText {
		return 0, fmt.Errorf("%s is not a size", n)
	}
	r, ok := parseDecimal(n)
	if !ok || !r.IsInt() || r.Sign() < 0 {
		return 0, fmt.Errorf("%s is not a size: want a whole, non-negative number of bytes", n)
	}
	if r.Num().Cmp(big.NewInt(int64(MaxSize))) > 0 {
		return 0, fmt.Errorf("%s is not a size: larger than 1TiB", n)
	}
	return Size(r.Num().Int64()), nil
}

// String returns the size as an integer count of bytes.
func (s Size) String() string { return strconv.FormatInt(int64(s), 10) }

// MarshalJSON writes the count of thousandths as an integer.
func (m Milli) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatInt(int64(m), 10)), nil
}

// UnmarshalJSON reads an integer count of thousandths.
func (m *Milli) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return fmt.Errorf("milli value must be an integer: %w", err)
	}
	*m = Milli(v)
	return nil
}

// maxCPUs bounds resources.cpus.
const maxCPUs = 1024

// parseCPUs converts a decimal number of CPUs ("2", "0.5", "1.25") into
// thousandths. More than three decimals, zero, negatives and more than
// maxCPUs are refused.
func parseCPUs(n string) (Milli, error) {
	if len(n) > maxUnitText {
		return 0, fmt.Errorf("%s is not a CPU count", n)
	}
	r, ok := parseDecimal(n)
	if !ok {
		return 0, fmt.Errorf("%s is not a CPU count", n)
	}
	if r.Sign() <= 0 || r.Cmp(big.NewRat(maxCPUs, 1)) > 0 {
		return 0, fmt.Errorf("%s CPUs is out of range (want more than 0, at most %d)", n, maxCPUs)
	}
	r.Mul(r, big.NewRat(1000, 1))
	if !r.IsInt() {
		return 0, fmt.Errorf("%s CPUs is finer than a thousandth", n)
	}
	return Milli(r.Num().Int64()), nil
}

// parseDecimal parses a JSON number exactly. The exponent is bounded so
// that a short hostile input ("1e999999999") cannot make big.Rat allocate
// without limit.
func parseDecimal(n string) (*big.Rat, bool) {
	if n == "" || len(n) > 64 {
		return nil, false
	}
	i := 0
	if n[i] == '-' {
		i++
	}
	start := i
	for i < len(n) && n[i] >= '0' && n[i] <= '9' {
		i++
	}
	if i == start {
		return nil, false
	}
	if i < len(n) && n[i] == '.' {
		i++
		fs := i
		for i < len(n) && n[i] >= '0' && n[i] <= '9' {
			i++
		}
		if i == fs {
			return nil, false
		}
	}
	if i < len(n) && (n[i] == 'e' || n[i] == 'E') {
		i++
		if i < len(n) && (n[i] == '+' || n[i] == '-') {
			i++
		}
		es := i
		for i < len(n) && n[i] >= '0' && n[i] <= '9' {
			i++
		}
		if i == es || i-es > 3 {
			return nil, false
		}
	}
	if i != len(n) {
		return nil, false
	}
	return new(big.Rat).SetString(n)
}
