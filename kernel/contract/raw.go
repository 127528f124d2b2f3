package contract

import "encoding/json"

// The raw structs mirror the file format (and the JSON Schema) field by
// field. Pointers and nil slices tell "absent" from "set".

type rawContract struct {
	Version  json.Number           `json:"version"`
	Name     string                `json:"name"`
	Defaults *rawSettings          `json:"defaults"`
	Checks   []rawCheck            `json:"checks"`
	Criteria []Criterion           `json:"criteria"`
	Approval *rawApproval          `json:"approval"`
	Budget   *rawBudget            `json:"budget"`
	Profiles map[string]rawProfile `json:"profiles"`
	Caches   map[string]rawCache   `json:"caches"`
	Tools    []rawTool             `json:"tools"`
	Policy   []rawRule             `json:"policy"`
	// Authorization is authorization.go's section.
	Authorization *rawAuthorization `json:"authorization"`
	// Cleanup and Benchmark: cleanup.go and benchmark.go (issue 16).
	Cleanup   []string      `json:"cleanup"`
	Benchmark *rawBenchmark `json:"benchmark"`
	Retention *rawRetention `json:"retention"`
}

// rawSettings are the settings of defaults and of a check: what the check
// runs in (runtime, image, env) and the tunable limits and isolation.
type rawSettings struct {
	Runtime *string           `json:"runtime"`
	Image   *string           `json:"image"`
	Env     map[string]string `json:"env"`
	// EnvFromHost names harness variables a process check receives (ADR 0012).
	EnvFromHost []string `json:"env_from_host"`
	rawTunables
}

// rawTunables are the settings a profile may also set: limits, which may
// change either way, and isolation, which may only tighten.
type rawTunables struct {
	Pull        *string         `json:"pull"`
	Timeout     *string         `json:"timeout"`
	OutputLimit json.RawMessage `json:"output_limit"`
	Network     *string         `json:"network"`
	Workspace   *string         `json:"workspace"`
	Resources   *rawResources   `json:"resources"`
	Tmpfs       json.RawMessage `json:"tmpfs"`
	WorkspaceSz json.RawMessage `json:"workspace_size"`
	AllowRoot   *bool           `json:"allow_root"`
	Mounts      *[]rawMount     `json:"mounts"`
}

type rawResources struct {
	Memory json.RawMessage `json:"memory"`
	CPUs   *json.Number    `json:"cpus"`
	Pids   *json.Number    `json:"pids"`
}

type rawMount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	Writable bool   `json:"writable"`
}

type rawCheck struct {
	ID        string   `json:"id"`
	Run       []string `json:"run"`
	Dir       *string  `json:"dir"`
	Criteria  []string `json:"criteria"`
	DependsOn []string `json:"depends_on"`
	Evidence  *string  `json:"evidence"`
	// Caches items are a cache name or {name, readonly}.
	Caches []json.RawMessage `json:"caches"`
	// Produces are the path globs of the files the check produces.
	Produces []string `json:"produces"`
	rawSettings
}

// rawProfileCheck overrides one base check, found by id. It has no field
// for what the check runs (run, dir, runtime, image, env) nor for its
// criteria, dependencies or evidence mode: a workflow, which a pull request
// can edit, chooses the profile, so a profile must never weaken a check.
type rawProfileCheck struct {
	ID string `json:"id"`
	rawTunables
}

type rawApproval struct {
	Required           *json.Number      `json:"required"`
	Roles              []string          `json:"roles"`
	AllowCommitAuthors *bool             `json:"allow_commit_authors"`
	Mode               *string           `json:"mode"`
	Rules              []rawApprovalRule `json:"rules"`
	Disapproval        *Disapproval      `json:"disapproval"`
	AgentSessions      *rawAgentSessions `json:"agent_sessions"`
}

type rawBudget struct {
	MaxDuration *string `json:"max_duration"`
}

type rawProfile struct {
	Extends  *string           `json:"extends"`
	Checks   []rawProfileCheck `json:"checks"`
	Approval *rawApproval      `json:"approval"`
	Budget   *rawBudget        `json:"budget"`
	// Tools and Policy exist so the loader can refuse them by name: a
	// profile cannot change either (the schema refuses them too).
	Tools  json.RawMessage `json:"tools"`
	Policy json.RawMessage `json:"policy"`
}

// rawTool is one tool of the tools: section. Its execution settings are a
// check's, but env_from_host (the schema refuses it: a tool an agent calls
// never receives the harness's secrets) and caches.
type rawTool struct {
	Name        string              `json:"name"`
	Description *string             `json:"description"`
	Run         []string            `json:"run"`
	Params      map[string]rawParam `json:"params"`
	Stdin       *string             `json:"stdin"`
	Dir         *string             `json:"dir"`
	rawSettings
}

type rawParam struct {
	Type        string       `json:"type"`
	Required    *bool        `json:"required"`
	Description *string      `json:"description"`
	MaxLength   *json.Number `json:"max_length"`
	MaxItems    *json.Number `json:"max_items"`
	Pattern     *string      `json:"pattern"`
	Enum        []string     `json:"enum"`
}

type rawRule struct {
	ID     *string `json:"id"`
	Tool   string  `json:"tool"`
	Effect string  `json:"effect"`
	Reason *string `json:"reason"`
}
