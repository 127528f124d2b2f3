package session

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/proofgate/proofgate/internal/beneath"
	"github.com/proofgate/proofgate/internal/tool"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// The tool opens a path argument itself, in the work tree (the process
// runtime runs in the repository): tool.Render's lexical check cannot see
// a link in the tree to /etc/passwd, a ../ link, a chain, a named pipe.
// Each path argument is resolved in the tool's working directory without
// following a link out of it (internal/beneath) when the call starts, again
// just before the tool runs, and once more after it ran: a path refused
// then (a link swapped in by a concurrent call) makes the call an error
// whose output is withheld, never returned nor stored. A link swapped in
// and back out while the tool runs is not seen: the tool opens the path
// by name, and handing it an opened descriptor instead would change the
// argv it was declared with.

// checkedPaths is what each path argument of a call resolved to.
type checkedPaths struct {
	wd      string
	entries map[string]beneath.Entry
}

// toolDir is the tool's working directory in the repository.
func toolDir(repo string, t contract.Tool) string {
	return filepath.Join(repo, filepath.FromSlash(t.Dir))
}

// checkPaths resolves c's path arguments in wd; a refusal is a
// *tool.ArgError (ReasonPath) naming the parameter.
func checkPaths(wd string, c tool.Call) (checkedPaths, error) {
	cp := checkedPaths{wd: wd, entries: map[string]beneath.Entry{}}
	for _, name := range slices.Sorted(maps.Keys(c.Paths)) {
		e, err := beneath.Resolve(wd, c.Paths[name])
		if err != nil {
			return cp, &tool.ArgError{Param: name, Reason: tool.ReasonPath, Why: err.Error()}
		}
		cp.entries[name] = e
	}
	return cp, nil
}

// moved names the first path argument that resolution refuses now
// (a link out of the tree, a named pipe where the checked file was), or
// "". A file the tool replaced or removed inside the tree is no move: a
// formatter renames over its input, a cleanup tool deletes it.
func (cp checkedPaths) moved() string {
	for _, name := range slices.Sorted(maps.Keys(cp.entries)) {
		if _, err := beneath.Resolve(cp.wd, cp.entries[name].Path); err != nil {
			return name
		}
	}
	return ""
}

// withheld is the result of a call whose path argument moved: an error,
// its output dropped.
func withheld(res runtime.Result, param string) runtime.Result {
	res.ExitCode, res.Outcome = -1, runtime.Error
	res.Detail = fmt.Sprintf("path argument %q changed while the call ran (a link swapped in?): its output is withheld", param)
	return res
}
