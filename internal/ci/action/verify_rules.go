package action

import (
	"regexp"
	"strings"
)

// ruleName is the contract's syntax of an approval rule name.
var ruleName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// readRequireRules reads input require-rule: approval rule names,
// separated by commas or new lines, each of which the bundle's approval
// must have satisfied (bundle.WithRequireRule). Empty requires none.
func readRequireRules(f *workflow, in *verifyInputs) *refusal {
	v := f.input("require-rule")
	for _, name := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '\n' }) {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !ruleName.MatchString(name) {
			return refuseUsage("input require-rule: %q is not an approval rule name (%s)", name, ruleName)
		}
		in.requireRules = append(in.requireRules, name)
	}
	return nil
}
