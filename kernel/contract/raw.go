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
}

type rawSettings struct {
	Runtime     *string           `json:"runtime"`
	Image       *string           `json:"image"`
	Pull        *string           `json:"pull"`
	Timeout     *string           `json:"timeout"`
	OutputLimit json.RawMessage   `json:"output_limit"`
	Network     *string           `json:"network"`
	Workspace   *string           `json:"workspace"`
	Resources   *rawResources     `json:"resources"`
	Tmpfs       json.RawMessage   `json:"tmpfs"`
	Env         map[string]string `json:"env"`
	AllowRoot   *bool             `json:"allow_root"`
	Mounts      *[]rawMount       `json:"mounts"`
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
	rawSettings
}

type rawProfileCheck struct {
	ID  string   `json:"id"`
	Run []string `json:"run"`
	Dir *string  `json:"dir"`
	rawSettings
}

type rawApproval struct {
	Required           *json.Number `json:"required"`
	Roles              []string     `json:"roles"`
	AllowCommitAuthors *bool        `json:"allow_commit_authors"`
}

type rawBudget struct {
	MaxDuration *string `json:"max_duration"`
}

type rawProfile struct {
	Extends  *string           `json:"extends"`
	Checks   []rawProfileCheck `json:"checks"`
	Approval *rawApproval      `json:"approval"`
	Budget   *rawBudget        `json:"budget"`
}
