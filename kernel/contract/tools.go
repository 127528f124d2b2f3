package contract

// Tool is one fully resolved tool an agent session may call (the contract's
// tools: section). Its execution fields are resolved from defaults exactly as
// a check's are, and carry the same JSON names.
type Tool struct {
	Name        string           `json:"name"`
	Description string           `json:"description,omitempty"`
	Run         []string         `json:"run"`
	Params      map[string]Param `json:"params,omitempty"`
	Stdin       string           `json:"stdin,omitempty"` // "" | "json"

	Dir           string            `json:"dir,omitempty"`
	Runtime       string            `json:"runtime"`
	Image         string            `json:"image,omitempty"`
	Pull          string            `json:"pull"`
	Timeout       Duration          `json:"timeout"`
	Output        Size              `json:"output_limit"`
	Network       string            `json:"network"`
	Workspace     string            `json:"workspace"`
	Resources     Resources         `json:"resources"`
	Tmpfs         Size              `json:"tmpfs"`
	WorkspaceSize Size              `json:"workspace_size,omitempty"`
	AllowRoot     bool              `json:"allow_root,omitempty"`
	Mounts        []Mount           `json:"mounts,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
}

// Param is one typed parameter of a tool.
type Param struct {
	Type        string   `json:"type"` // string | integer | boolean | path | array
	Required    bool     `json:"required,omitempty"`
	MaxLength   int      `json:"max_length,omitempty"`
	MaxItems    int      `json:"max_items,omitempty"` // array only: most elements (effective value)
	Pattern     string   `json:"pattern,omitempty"`
	Enum        []string `json:"enum,omitempty"`
	Description string   `json:"description,omitempty"`
}

// Rule is one policy rule: the first rule whose Tool equals a call's tool
// name decides the call.
type Rule struct {
	ID     string `json:"id"`
	Tool   string `json:"tool"`
	Effect string `json:"effect"` // allow | block | require-approval
	Reason string `json:"reason,omitempty"`
}

// Tool returns the tool with the given name (exact byte match).
func (r *Resolved) Tool(name string) (Tool, bool) {
	for _, t := range r.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}
