package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// hostsPrefix starts the name of a harness's private /etc/hosts directory:
// hostsPrefix<pid namespace>-<pid>-<random>. A harness removes its own in
// Close; one that was killed cannot, so the next harness to start in the
// same parent removes the directories whose pid is provably gone in its
// own pid namespace (sweepHosts). The namespace is in the name because a
// parent such as the runner's /github/home is shared by containers whose
// pids mean different processes.
const hostsPrefix = "proofgate-sandbox-"

// mkHostsDir creates this process's hosts directory under parent, after
// sweeping the ones dead harnesses left there.
func mkHostsDir(parent string) (string, error) {
	ns := pidNamespaceNumber()
	if ns != "" {
		sweepHosts(parent, ns)
	} else {
		ns = "0" // unknown: never swept (sweepHosts needs a namespace)
	}
	return os.MkdirTemp(parent, fmt.Sprintf("%s%s-%d-", hostsPrefix, ns, os.Getpid()))
}

// sweepHosts removes parent's hosts directories of processes that no
// longer exist: only real directories (never a symlink) owned by this
// user, never this process's, and never one whose pid is alive or whose
// liveness is unknown (a reused pid keeps its directory: a leak, not a
// removal under a live harness).
func sweepHosts(parent, ns string) {
	matches, _ := filepath.Glob(filepath.Join(parent, hostsPrefix+ns+"-*-*"))
	for _, m := range matches {
		pid, ok := hostsPID(filepath.Base(m), ns)
		if !ok || pid == os.Getpid() || !pidGone(pid) {
			continue
		}
		fi, err := os.Lstat(m)
		if err != nil || !fi.IsDir() || !ownedBySelf(fi) {
			continue
		}
		os.RemoveAll(m)
	}
}

// hostsPID is the pid in the name of a hosts directory of namespace ns.
func hostsPID(name, ns string) (int, bool) {
	rest, ok := strings.CutPrefix(name, hostsPrefix+ns+"-")
	if !ok {
		return 0, false
	}
	p, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	return pid, err == nil && pid > 0 && strconv.Itoa(pid) == p
}

// pidNamespaceNumber is the inode number of this process's pid namespace
// ("4026531836" of "pid:[4026531836]"), or "" when it is not known.
func pidNamespaceNumber() string {
	n, ok := strings.CutPrefix(pidNamespace(), "pid:[")
	n, ok2 := strings.CutSuffix(n, "]")
	if !ok || !ok2 || n == "" || strings.Trim(n, "0123456789") != "" {
		return ""
	}
	return n
}
