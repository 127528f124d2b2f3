package contract

import (
	"encoding/json"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Built-in defaults, applied before the contract's own defaults.
const (
	DefaultRuntime     = "docker"
	DefaultPull        = "never"
	DefaultTimeout     = Duration(10 * time.Minute)
	DefaultOutputLimit = Size(1 << 20)
	DefaultNetwork     = "none"
	DefaultWorkspace   = "readonly"
	DefaultMemory      = Size(2 << 30)
	DefaultCPUs        = Milli(2000)
	DefaultPids        = 512
	DefaultTmpfs       = Size(64 << 20)
	// DefaultWorkspaceSize bounds a copy-mode workspace (copy plus writes).
	DefaultWorkspaceSize = Size(1 << 30)
	DefaultApprovals     = 1
)

// roles lists the GitHub repository roles in increasing order of permission.
var roles = []string{"read", "triage", "write", "maintain", "admin"}

// defaultRoles are the roles whose approval counts when a contract says nothing.
var defaultRoles = []string{"write", "maintain", "admin"}

func builtinCheck() Check {
	return Check{
		Runtime:   DefaultRuntime,
		Pull:      DefaultPull,
		Timeout:   DefaultTimeout,
		Output:    DefaultOutputLimit,
		Network:   DefaultNetwork,
		Workspace: DefaultWorkspace,
		Resources: Resources{Memory: DefaultMemory, CPUs: DefaultCPUs, Pids: DefaultPids},
		Tmpfs:     DefaultTmpfs,
	}
}

// clone deep-copies a check.
func (c Check) clone() Check {
	c.Run = slices.Clone(c.Run)
	c.Criteria = slices.Clone(c.Criteria)
	c.DependsOn = slices.Clone(c.DependsOn)
	c.Mounts = slices.Clone(c.Mounts)
	c.Env = maps.Clone(c.Env)
	c.EnvFromHost = slices.Clone(c.EnvFromHost)
	c.Caches = slices.Clone(c.Caches)
	c.Produces = slices.Clone(c.Produces)
	return c
}

func (r *Resolved) clone() *Resolved {
	out := *r
	out.Checks = make([]Check, len(r.Checks))
	for i, c := range r.Checks {
		out.Checks[i] = c.clone()
	}
	out.Criteria = slices.Clone(r.Criteria)
	out.Approval.Roles = slices.Clone(r.Approval.Roles)
	out.Caches = slices.Clone(r.Caches)
	if r.Tools != nil {
		out.Tools = make([]Tool, len(r.Tools))
		for i, t := range r.Tools {
			out.Tools[i] = t.clone()
		}
	}
	out.Policy = slices.Clone(r.Policy)
	if r.Authorization != nil {
		a := *r.Authorization
		out.Authorization = &a
	}
	out.Cleanup = slices.Clone(r.Cleanup)
	if r.Benchmark != nil {
		b := *r.Benchmark
		out.Benchmark = &b
	}
	if r.Retention != nil {
		rt := *r.Retention
		out.Retention = &rt
	}
	return &out
}

// resolve resolves the contract: defaults, checks, criteria, the references
// between them, approval and budget, then every profile, returning the one
// asked for ("" = the base).
func (p *parser) resolve(raw *rawContract, profile string) (*Resolved, error) {
	if raw.Version != "1" {
		return nil, p.errf("version", "%s is not supported (want 1)", raw.Version)
	}
	base := &Resolved{Version: 1, Name: raw.Name}

	tmpl := builtinCheck()
	if raw.Defaults != nil {
		if err := p.applySettings(&tmpl, raw.Defaults, "defaults"); err != nil {
			return nil, err
		}
	}
	checks, first, err := p.resolveChecks(tmpl, raw.Checks)
	if err != nil {
		return nil, err
	}
	base.Checks = checks
	crit := map[string]int{}
	for i, c := range raw.Criteria {
		if j, dup := crit[c.ID]; dup {
			return nil, p.errf(fieldPath("criteria").idx(i).key("id"), "duplicate criterion id %q (first at criteria[%d])", c.ID, j)
		}
		crit[c.ID] = i
		base.Criteria = append(base.Criteria, c)
	}
	if err := p.checkReferences(base.Checks, first, crit); err != nil {
		return nil, err
	}
	if err := p.checkDependencyCycles(base.Checks, first); err != nil {
		return nil, err
	}
	if err := p.resolveCaches(base, raw); err != nil {
		return nil, err
	}
	if base.Tools, err = p.resolveTools(tmpl, raw.Tools); err != nil {
		return nil, err
	}
	if base.Policy, err = p.resolvePolicy(base.Tools, raw.Policy); err != nil {
		return nil, err
	}
	if base.Authorization, err = p.resolveAuthorization(raw.Authorization); err != nil {
		return nil, err
	}
	if base.Cleanup, err = p.resolveCleanup(raw.Cleanup); err != nil {
		return nil, err
	}
	if base.Benchmark, err = p.resolveBenchmark(raw.Benchmark); err != nil {
		return nil, err
	}
	if base.Retention, err = p.resolveRetention(raw.Retention); err != nil {
		return nil, err
	}

	// Approval and budget.
	base.Approval = Approval{Required: DefaultApprovals, Roles: slices.Clone(defaultRoles)}
	if raw.Approval != nil {
		if err := p.applyApproval(&base.Approval, raw.Approval, "approval", nil); err != nil {
			return nil, err
		}
	}
	if raw.Budget != nil {
		if err := p.applyBudget(&base.Budget, raw.Budget, "budget"); err != nil {
			return nil, err
		}
	}
	return p.chooseProfile(base, raw.Profiles, profile)
}

// resolveChecks resolves each check over the defaults tmpl. first maps each
// check id to its index.
func (p *parser) resolveChecks(tmpl Check, raws []rawCheck) (checks []Check, first map[string]int, err error) {
	first = map[string]int{}
	for i, rc := range raws {
		cp := fieldPath("checks").idx(i)
		if j, dup := first[rc.ID]; dup {
			return nil, nil, p.errf(cp.key("id"), "duplicate check id %q (first at checks[%d])", rc.ID, j)
		}
		first[rc.ID] = i
		c := tmpl.clone()
		c.ID = rc.ID
		if err := p.applySettings(&c, &rc.rawSettings, cp); err != nil {
			return nil, nil, err
		}
		if err := p.setRun(&c, rc.Run, cp.key("run")); err != nil {
			return nil, nil, err
		}
		if rc.Dir != nil {
			if err := p.setDir(&c, *rc.Dir, cp.key("dir")); err != nil {
				return nil, nil, err
			}
		}
		c.Criteria = nilIfEmpty(slices.Clone(rc.Criteria))
		c.DependsOn = nilIfEmpty(slices.Clone(rc.DependsOn))
		if rc.Evidence != nil {
			c.Evidence = *rc.Evidence
		}
		if err := p.checkImage(&c, cp); err != nil {
			return nil, nil, err
		}
		if err := p.checkEnvFromHost(&c, &rc.rawSettings, cp); err != nil {
			return nil, nil, err
		}
		if err := p.setProduces(&c, rc.Produces, cp); err != nil {
			return nil, nil, err
		}
		checks = append(checks, c)
	}
	return checks, first, nil
}

// checkReferences refuses a check that names an unknown criterion, an
// unknown check or itself.
func (p *parser) checkReferences(checks []Check, first, crit map[string]int) error {
	for i, c := range checks {
		cp := fieldPath("checks").idx(i)
		for j, id := range c.Criteria {
			if _, ok := crit[id]; !ok {
				return p.errf(cp.key("criteria").idx(j), "unknown criterion %q", id)
			}
		}
		for j, id := range c.DependsOn {
			if id == c.ID {
				return p.errf(cp.key("depends_on").idx(j), "check %q depends on itself", id)
			}
			if _, ok := first[id]; !ok {
				return p.errf(cp.key("depends_on").idx(j), "unknown check %q", id)
			}
		}
	}
	return nil
}

// chooseProfile resolves every profile, so that a broken profile is refused
// whichever profile was asked for, and returns the one asked for.
func (p *parser) chooseProfile(base *Resolved, profiles map[string]rawProfile, profile string) (*Resolved, error) {
	names := slices.Sorted(maps.Keys(profiles))
	var chosen *Resolved
	memo := map[string]*Resolved{}
	for _, name := range names {
		r, err := p.resolveProfile(base, profiles, name, memo)
		if err != nil {
			return nil, err
		}
		if name == profile {
			chosen = r
		}
	}
	if profile == "" {
		return finish(base), nil
	}
	if chosen == nil {
		known := "none are defined"
		if len(names) > 0 {
			known = "known profiles: " + strings.Join(names, ", ")
		}
		return nil, p.errf("", "unknown profile %q (%s)", profile, known)
	}
	return finish(chosen), nil
}

// effectiveWorkspaceSize is the bound a copy-mode workspace of c gets: its
// declared workspace_size, or the default.
func effectiveWorkspaceSize(c Check) Size {
	if c.WorkspaceSize > 0 {
		return c.WorkspaceSize
	}
	return DefaultWorkspaceSize
}

// finish returns a copy of r whose copy-mode checks carry their effective
// workspace_size and whose other checks carry none. While resolving, a
// declared size is kept whatever the mode, since a profile may switch a
// check to copy.
func finish(r *Resolved) *Resolved {
	out := r.clone()
	for i := range out.Checks {
		c := &out.Checks[i]
		if c.Workspace == "copy" {
			c.WorkspaceSize = effectiveWorkspaceSize(*c)
		} else {
			c.WorkspaceSize = 0
		}
	}
	return out
}

// checkDependencyCycles refuses depends_on cycles, naming the cycle. The
// search visits checks in file order and dependencies in listed order, so
// the reported cycle is deterministic.
func (p *parser) checkDependencyCycles(checks []Check, index map[string]int) error {
	const (
		unvisited = iota
		active
		done
	)
	state := make([]int, len(checks))
	var stack []int
	var visit func(i int) error
	visit = func(i int) error {
		state[i] = active
		stack = append(stack, i)
		for j, dep := range checks[i].DependsOn {
			k := index[dep]
			switch state[k] {
			case active:
				start := slices.Index(stack, k)
				var ids []string
				for _, s := range stack[start:] {
					ids = append(ids, checks[s].ID)
				}
				ids = append(ids, dep)
				return p.errf(fieldPath("checks").idx(i).key("depends_on").idx(j), "dependency cycle: %s", strings.Join(ids, " -> "))
			case unvisited:
				if err := visit(k); err != nil {
					return err
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = done
		return nil
	}
	for i := range checks {
		if state[i] == unvisited {
			if err := visit(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// applySettings overlays the fields set in s (defaults or a check) onto c.
// env overlays key by key; the tunables as in applyTunables.
func (p *parser) applySettings(c *Check, s *rawSettings, at fieldPath) error {
	if s.Runtime != nil {
		c.Runtime = *s.Runtime
	}
	if s.Image != nil {
		if msg := imageProblem(*s.Image); msg != "" {
			return p.errf(at.key("image"), "%s", msg)
		}
		c.Image = *s.Image
	}
	if s.Env != nil {
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			if strings.IndexByte(s.Env[k], 0) >= 0 {
				return p.errf(at.key("env").key(k), "contains a NUL byte")
			}
		}
		if c.Env == nil {
			c.Env = map[string]string{}
		}
		maps.Copy(c.Env, s.Env)
		if len(c.Env) == 0 {
			c.Env = nil
		}
	}
	if s.EnvFromHost != nil {
		// The list replaces the inherited one, like mounts.
		c.EnvFromHost = nilIfEmpty(slices.Sorted(slices.Values(s.EnvFromHost)))
	}
	return p.applyTunables(c, &s.rawTunables, at)
}

// applyTunables overlays the limits and isolation settings set in s onto c:
// resources field by field; mounts replace the list. Defaults, checks and
// profile checks all share it.
func (p *parser) applyTunables(c *Check, s *rawTunables, at fieldPath) error {
	if s.Pull != nil {
		c.Pull = *s.Pull
	}
	if s.Timeout != nil {
		d, err := ParseDuration(*s.Timeout)
		if err != nil {
			return p.errf(at.key("timeout"), "%s", err.Error())
		}
		c.Timeout = d
	}
	if s.OutputLimit != nil {
		v, err := p.positiveSize(s.OutputLimit, at.key("output_limit"))
		if err != nil {
			return err
		}
		c.Output = v
	}
	if s.Network != nil {
		c.Network = *s.Network
	}
	if s.Workspace != nil {
		c.Workspace = *s.Workspace
	}
	if s.Resources != nil {
		if err := p.applyResources(&c.Resources, s.Resources, at.key("resources")); err != nil {
			return err
		}
	}
	if s.Tmpfs != nil {
		v, err := p.positiveSize(s.Tmpfs, at.key("tmpfs"))
		if err != nil {
			return err
		}
		c.Tmpfs = v
	}
	if s.WorkspaceSz != nil {
		v, err := p.positiveSize(s.WorkspaceSz, at.key("workspace_size"))
		if err != nil {
			return err
		}
		c.WorkspaceSize = v
	}
	if s.AllowRoot != nil {
		c.AllowRoot = *s.AllowRoot
	}
	if s.Mounts != nil {
		ms, err := p.mounts(*s.Mounts, at.key("mounts"))
		if err != nil {
			return err
		}
		c.Mounts = ms
	}
	return nil
}

// applyResources overlays the resources set in r onto res, field by field.
func (p *parser) applyResources(res *Resources, r *rawResources, rp fieldPath) error {
	if r.Memory != nil {
		v, err := p.positiveSize(r.Memory, rp.key("memory"))
		if err != nil {
			return err
		}
		res.Memory = v
	}
	if r.CPUs != nil {
		m, err := parseCPUs(r.CPUs.String())
		if err != nil {
			return p.errf(rp.key("cpus"), "%s", err.Error())
		}
		res.CPUs = m
	}
	if r.Pids != nil {
		n, err := strconv.ParseInt(r.Pids.String(), 10, 64)
		if err != nil || n < 1 {
			return p.errf(rp.key("pids"), "%s is not a positive integer", r.Pids.String())
		}
		res.Pids = n
	}
	return nil
}

// mounts checks a mount list and refuses a target mounted twice.
func (p *parser) mounts(raw []rawMount, mp fieldPath) ([]Mount, error) {
	var ms []Mount
	targets := map[string]int{}
	for i, rm := range raw {
		m, err := p.checkMount(rm, mp.idx(i))
		if err != nil {
			return nil, err
		}
		if j, dup := targets[m.Target]; dup {
			return nil, p.errf(mp.idx(i).key("target"), "duplicate mount target %q (first at %s)", m.Target, mp.idx(j))
		}
		targets[m.Target] = i
		ms = append(ms, m)
	}
	return ms, nil
}

// positiveSize parses a size field (an integer or a unit string) and
// refuses zero: a zero tmpfs or memory limit means "unlimited" to Docker.
func (p *parser) positiveSize(raw json.RawMessage, at fieldPath) (Size, error) {
	var v Size
	if err := v.UnmarshalJSON(raw); err != nil {
		return 0, p.errf(at, "%s", err.Error())
	}
	if v < 1 {
		return 0, p.errf(at, "must be at least 1 byte")
	}
	return v, nil
}

func (p *parser) setRun(c *Check, run []string, at fieldPath) error {
	if len(run) == 0 || run[0] == "" {
		return p.errf(at, "argv must not be empty")
	}
	for i, a := range run {
		if strings.IndexByte(a, 0) >= 0 {
			return p.errf(at.idx(i), "contains a NUL byte")
		}
	}
	c.Run = slices.Clone(run)
	return nil
}

// setDir validates a working directory: relative to the repository root,
// no "..", no NUL. "." resolves to "" (the root).
func (p *parser) setDir(c *Check, dir string, at fieldPath) error {
	if strings.IndexByte(dir, 0) >= 0 {
		return p.errf(at, "contains a NUL byte")
	}
	if path.IsAbs(dir) || strings.HasPrefix(dir, `\`) {
		return p.errf(at, "%q must be relative to the repository root", dir)
	}
	if hasDotDot(dir) {
		return p.errf(at, "%q must not contain \"..\"", dir)
	}
	d := path.Clean(dir)
	if d == "." {
		d = ""
	}
	c.Dir = d
	return nil
}

// hasDotDot reports whether any element of a slash- or backslash-separated
// path is "..".
func hasDotDot(p string) bool {
	for _, el := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if el == ".." {
			return true
		}
	}
	return false
}

// checkImage requires an image for docker checks.
func (p *parser) checkImage(c *Check, at fieldPath) error {
	if c.Runtime == "docker" && c.Image == "" {
		return p.errf(at.key("image"), "required when runtime is docker")
	}
	return nil
}

// applyApproval overlays an approval object. With base non-nil (a profile),
// it refuses anything looser than the base contract.
func (p *parser) applyApproval(a *Approval, ra *rawApproval, at fieldPath, base *Approval) error {
	if ra.Required != nil {
		n, err := strconv.Atoi(ra.Required.String())
		if err != nil || n < 0 || n > 10 {
			return p.errf(at.key("required"), "%s is not an integer from 0 to 10", ra.Required.String())
		}
		if base != nil && n < base.Required {
			return p.errf(at.key("required"), "%d is below the base contract's %d: a profile cannot lower approval", n, base.Required)
		}
		a.Required = n
	}
	if ra.Roles != nil {
		var ordered []string
		for _, r := range roles {
			if slices.Contains(ra.Roles, r) {
				ordered = append(ordered, r)
			}
		}
		if len(ordered) != len(ra.Roles) {
			return p.errf(at.key("roles"), "roles must be distinct values of %s", strings.Join(roles, ", "))
		}
		if base != nil {
			for i, r := range ra.Roles {
				if !slices.Contains(base.Roles, r) {
					return p.errf(at.key("roles").idx(i), "role %q is not among the base contract's roles [%s]: a profile cannot widen approval", r, strings.Join(base.Roles, ", "))
				}
			}
		}
		a.Roles = ordered
	}
	if ra.AllowCommitAuthors != nil {
		if base != nil && *ra.AllowCommitAuthors && !base.AllowCommitAuthors {
			return p.errf(at.key("allow_commit_authors"), "the base contract does not let commit authors approve: a profile cannot allow it")
		}
		a.AllowCommitAuthors = *ra.AllowCommitAuthors
	}
	if err := p.applyAgentSessions(a, ra, at, base); err != nil {
		return err
	}
	return p.applyRules(a, ra, at, base)
}

func (p *parser) applyBudget(b *Budget, rb *rawBudget, at fieldPath) error {
	if rb.MaxDuration != nil {
		d, err := ParseDuration(*rb.MaxDuration)
		if err != nil {
			return p.errf(at.key("max_duration"), "%s", err.Error())
		}
		b.MaxDuration = d
	}
	return nil
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// chain returns the extends chain of profile name, root-most ancestor first.
func (p *parser) chain(profiles map[string]rawProfile, name string) ([]string, error) {
	var rev []string
	seen := map[string]int{}
	cur := name
	for {
		if i, ok := seen[cur]; ok {
			cycle := append(slices.Clone(rev[i:]), cur)
			return nil, p.errf(fieldPath("profiles").key(rev[len(rev)-1]).key("extends"), "profile cycle: %s", strings.Join(cycle, " -> "))
		}
		seen[cur] = len(rev)
		rev = append(rev, cur)
		pr := profiles[cur]
		if pr.Extends == nil {
			break
		}
		next := *pr.Extends
		if _, ok := profiles[next]; !ok {
			return nil, p.errf(fieldPath("profiles").key(cur).key("extends"), "unknown profile %q (known profiles: %s)", next, strings.Join(slices.Sorted(maps.Keys(profiles)), ", "))
		}
		cur = next
	}
	slices.Reverse(rev)
	return rev, nil
}

// resolveProfile applies the extends chain of name onto the base contract,
// one layer at a time, checking after each layer that nothing is looser
// than the base.
// Resolved ancestors are memoised, so every layer is applied once per
// contract however long the chains are.
func (p *parser) resolveProfile(base *Resolved, profiles map[string]rawProfile, name string, memo map[string]*Resolved) (*Resolved, error) {
	if r, ok := memo[name]; ok {
		return r, nil
	}
	layers, err := p.chain(profiles, name)
	if err != nil {
		return nil, err
	}
	index := map[string]int{}
	for i, c := range base.Checks {
		index[c.ID] = i
	}
	parent := base
	for _, layer := range layers {
		if r, ok := memo[layer]; ok {
			parent = r
			continue
		}
		r := parent.clone()
		r.Profile = layer
		pr := profiles[layer]
		lp := fieldPath("profiles").key(layer)
		if err := p.refuseProfileTools(pr, lp); err != nil {
			return nil, err
		}
		seen := map[string]int{}
		for j, pc := range pr.Checks {
			cp := lp.key("checks").idx(j)
			i, ok := index[pc.ID]
			if !ok {
				return nil, p.errf(cp.key("id"), "unknown check %q", pc.ID)
			}
			if k, dup := seen[pc.ID]; dup {
				return nil, p.errf(cp.key("id"), "check %q is already overridden at %s", pc.ID, lp.key("checks").idx(k))
			}
			seen[pc.ID] = j
			// rawProfileCheck has no field for run, dir, runtime,
			// image, env, criteria, depends_on or evidence: only the
			// tunables can change, and isolation only tighten.
			c := &r.Checks[i]
			if err := p.applyTunables(c, &pc.rawTunables, cp); err != nil {
				return nil, err
			}
			if err := p.checkNotLooser(base.Checks[i], *c, cp); err != nil {
				return nil, err
			}
			if err := p.checkWorkspaceCaches(r, *c, func(int) fieldPath { return cp.key("workspace") }); err != nil {
				return nil, err
			}
		}
		if pr.Approval != nil {
			if err := p.applyApproval(&r.Approval, pr.Approval, lp.key("approval"), &base.Approval); err != nil {
				return nil, err
			}
		}
		if pr.Budget != nil {
			if err := p.applyBudget(&r.Budget, pr.Budget, lp.key("budget")); err != nil {
				return nil, err
			}
		}
		memo[layer] = r
		parent = r
	}
	return memo[name], nil
}

// workspaceExposure orders workspace modes by what they expose of the host:
// none exposes nothing; readonly and copy both expose the tree for reading
// and let no write reach the host.
var workspaceExposure = map[string]int{"none": 0, "readonly": 1, "copy": 1}

// checkNotLooser refuses a profile check whose isolation is weaker than the
// base check's: host network, root, a workspace the base did not expose, or
// a mount the base did not declare (or declared read-only). The runtime
// cannot differ: a profile has no field for it.
func (p *parser) checkNotLooser(base, c Check, at fieldPath) error {
	if base.Network == "none" && c.Network != "none" {
		return p.errf(at.key("network"), "%q is looser than the base check's %q: a profile cannot open the network", c.Network, base.Network)
	}
	if !base.AllowRoot && c.AllowRoot {
		return p.errf(at.key("allow_root"), "the base check does not run as root: a profile cannot allow it")
	}
	if workspaceExposure[c.Workspace] > workspaceExposure[base.Workspace] {
		return p.errf(at.key("workspace"), "%q is looser than the base check's %q: a profile cannot expose the workspace", c.Workspace, base.Workspace)
	}
	if len(c.Produces) > 0 && c.Runtime == "docker" && c.Workspace != "copy" {
		return p.errf(at.key("workspace"), "%q: the check produces files, which only a copy-mode workspace can hold", c.Workspace)
	}
	if c.Workspace == "copy" && effectiveWorkspaceSize(c) > effectiveWorkspaceSize(base) {
		return p.errf(at.key("workspace_size"), "%d bytes is above the base check's %d: a profile cannot raise the workspace bound", effectiveWorkspaceSize(c), effectiveWorkspaceSize(base))
	}
	for i, m := range c.Mounts {
		j := slices.IndexFunc(base.Mounts, func(b Mount) bool { return b.Source == m.Source && b.Target == m.Target })
		if j < 0 {
			return p.errf(at.key("mounts").idx(i), "mount %s:%s is not declared by the base check: a profile cannot add mounts", m.Source, m.Target)
		}
		if m.Writable && !base.Mounts[j].Writable {
			return p.errf(at.key("mounts").idx(i).key("writable"), "mount %s is read-only in the base check: a profile cannot make it writable", m.Target)
		}
	}
	return nil
}
