package tool

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/contract"
)

// text checks a string or path argument.
func text(name string, p contract.Param, raw []byte) (string, error) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", argErr(name, ReasonType, "want a string, got %s", kindOf(raw))
	}
	var s string
	if err := strictjson.Decode(raw, &s); err != nil {
		return "", argErr(name, ReasonType, "%v", err)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "", argErr(name, ReasonNUL, "contains a NUL byte")
	}
	max := p.MaxLength
	if max <= 0 {
		max = contract.DefaultMaxLength
	}
	if n := utf8.RuneCountInString(s); n > max {
		return "", argErr(name, ReasonTooLong, "%d characters, more than max_length %d", n, max)
	}
	if p.Type == contract.ParamPath {
		if why := pathProblem(s); why != "" {
			return "", argErr(name, ReasonPath, "%s", why)
		}
	}
	if p.Pattern != "" {
		re, err := regexp.Compile(p.Pattern)
		if err != nil {
			return "", argErr(name, ReasonPattern, "the parameter's pattern does not compile: %v", err)
		}
		if !re.MatchString(s) {
			return "", argErr(name, ReasonPattern, "does not match the parameter's pattern %s", printable.Escape(p.Pattern))
		}
	}
	if p.Enum != nil && !slices.Contains(p.Enum, s) {
		return "", argErr(name, ReasonEnum, "not one of %s", printable.Escape(strings.Join(p.Enum, ", ")))
	}
	return s, nil
}

// pathProblem says why s is not a clean relative path that stays inside
// the working directory and cannot be read as a flag, or "".
func pathProblem(s string) string {
	switch {
	case s == "":
		return "empty"
	case strings.HasPrefix(s, "/"):
		return "absolute; want a path relative to the working directory"
	case strings.HasPrefix(s, "-"):
		return "starts with \"-\", so a program would read it as a flag"
	case strings.ContainsRune(s, '\\'):
		return "holds a backslash; want a slash-separated path"
	case slices.Contains(strings.Split(s, "/"), ".."):
		return "has a \"..\" element"
	case filepath.Clean(s) != s:
		return "not clean (want " + filepath.Clean(s) + ")"
	}
	return ""
}
