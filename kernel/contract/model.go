package contract

import (
	"time"
)

// Resolved is a contract with its profile chain applied and every default
// filled in. Its canonical JSON (RFC 8785) is the frozen contract.json of a
// run, and its SHA-256 is the contract hash. Nothing in it depends on the
// machine that resolved it.
type Resolved struct {
	Version  int         `json:"version"`
	Name     string      `json:"name"`
	Profile  string      `json:"profile,omitempty"`
	Checks   []Check     `json:"checks"`
	Criteria []Criterion `json:"criteria,omitempty"`
	Approval Approval    `json:"approval"`
	Budget   Budget      `json:"budget"`
	// Caches are the declared caches, sorted by name; absent when none,
	// so the hash of a contract without caches is unchanged.
	Caches []Cache `json:"caches,omitempty"`
	// Tools are the tools an agent session may call, in contract order;
	// Policy is the ordered rule list that gates them. Both are absent
	// when none, so the hash of a contract without them is unchanged.
	Tools  []Tool `json:"tools,omitempty"`
	Policy []Rule `json:"policy,omitempty"`
	// Authorization is the authorization: section (authorization.go);
	// nil, and absent, unless it requires one.
	Authorization *Authorization `json:"authorization,omitempty"`
	// Cleanup are the cleanup roots (cleanup.go) and Benchmark the
	// suite and task the run is bound to (benchmark.go); both absent when
	// not declared, so the hash of a contract without them is unchanged.
	Cleanup   []string   `json:"cleanup,omitempty"`
	Benchmark *Benchmark `json:"benchmark,omitempty"`
	// Retention is the retention: section (kernel/contract/retention.go),
	// absent when none.
	Retention *Retention `json:"retention,omitempty"`
}

// Check is one fully resolved check.
type Check struct {
	ID        string    `json:"id"`
	Run       []string  `json:"run"`
	Dir       string    `json:"dir,omitempty"` // working directory relative to the repository root
	Criteria  []string  `json:"criteria,omitempty"`
	DependsOn []string  `json:"depends_on,omitempty"`
	Evidence  string    `json:"evidence,omitempty"` // "" (exit code only) | "structured"
	Runtime   string    `json:"runtime"`            // docker | process
	Image     string    `json:"image,omitempty"`
	Pull      string    `json:"pull"`    // never | missing | always
	Timeout   Duration  `json:"timeout"` // 0 = none
	Output    Size      `json:"output_limit"`
	Network   string    `json:"network"`   // none | host
	Workspace string    `json:"workspace"` // readonly | copy | none
	Resources Resources `json:"resources"`
	Tmpfs     Size      `json:"tmpfs"`
	// WorkspaceSize bounds what a copy-mode check can hold in its
	// workspace (the copy plus its writes); set exactly when Workspace is
	// "copy", so the canonical form of other checks is unchanged.
	WorkspaceSize Size              `json:"workspace_size,omitempty"`
	AllowRoot     bool              `json:"allow_root,omitempty"`
	Mounts        []Mount           `json:"mounts,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	// EnvFromHost names the harness's environment variables a process
	// check receives with their values at execution time (ADR 0012),
	// sorted. Names only: the resolved contract stays machine-independent;
	// the process runtime attests what it passed.
	EnvFromHost []string `json:"env_from_host,omitempty"`
	// Caches are the declared caches this check mounts, in list order.
	Caches []CacheUse `json:"caches,omitempty"`
	// Produces are the path globs of the files the check produces
	// (ADR 0039), relative to the repository root: after the check
	// passes, the harness reads each matching regular file out of its
	// workspace and records it, and the bundle attests it as a subject.
	// Absent when empty, so the hash of a check without it is unchanged.
	Produces []string `json:"produces,omitempty"`
}

// Resources are the sandbox limits of a check.
type Resources struct {
	Memory Size  `json:"memory"`
	CPUs   Milli `json:"cpus"` // thousandths of a CPU, so the JSON stays an integer
	Pids   int64 `json:"pids"`
}

// Mount is an extra bind mount, read-only unless Writable.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	Writable bool   `json:"writable,omitempty"`
}

// Criterion is an acceptance criterion checks map to.
type Criterion struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// Approval is the human approval rule.
type Approval struct {
	Required           int      `json:"required"`
	Roles              []string `json:"roles"`
	AllowCommitAuthors bool     `json:"allow_commit_authors"`
	// Mode, Rules and Disapproval are the approval rules (rules.go);
	// absent when the contract has none, so its hash is unchanged.
	Mode        string         `json:"mode,omitempty"`
	Rules       []ApprovalRule `json:"rules,omitempty"`
	Disapproval *Disapproval   `json:"disapproval,omitempty"`
	// AgentSessions pins the agent workflow (agentsession.go); absent
	// when unset, so the hash is unchanged.
	AgentSessions *AgentSessions `json:"agent_sessions,omitempty"`
}

// Budget bounds the whole run.
type Budget struct {
	MaxDuration Duration `json:"max_duration"` // 0 = none
}

// Check returns the check with the given id.
func (r *Resolved) Check(id string) (Check, bool) {
	for _, c := range r.Checks {
		if c.ID == id {
			return c, true
		}
	}
	return Check{}, false
}

// Duration is a time.Duration written as a Go duration string ("10m0s").
type Duration time.Duration

// Size is a byte count written as an integer.
type Size int64

// Milli is a count of thousandths (of a CPU).
type Milli int64
