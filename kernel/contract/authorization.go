package contract

// Authorization is the contract's authorization: section (issue 16 item 3):
// whether a run needs a recorded tracking authorization, a human decision
// that its result may be published to a named external target, before it
// can be COMPLETE. A contract without the section, or with
// {required: false}, resolves to a nil *Authorization, absent from the
// canonical JSON, so the contract hash of every contract without it is
// unchanged.
type Authorization struct {
	Required bool `json:"required"`
}

type rawAuthorization struct {
	Required *bool `json:"required"`
}

// resolveAuthorization resolves the authorization: section.
func (p *parser) resolveAuthorization(raw *rawAuthorization) (*Authorization, error) {
	if raw == nil {
		return nil, nil
	}
	if raw.Required == nil {
		return nil, p.errf(fieldPath("authorization").key("required"), "is required (true or false)")
	}
	if !*raw.Required {
		return nil, nil
	}
	return &Authorization{Required: true}, nil
}

// AuthorizationRequired reports whether a run of the contract needs an
// approved authorization before it can be COMPLETE.
func (r *Resolved) AuthorizationRequired() bool {
	return r != nil && r.Authorization != nil && r.Authorization.Required
}
