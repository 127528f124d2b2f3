package contract

// checkEnvFromHost refuses env_from_host where it cannot mean what it says:
// on a docker check (the harness's PATH or HOME means nothing inside an
// image, and nothing of the harness's environment reaches a sandbox), and
// for a name the check's env also declares (which value would win is not
// something a reader should have to know).
func (p *parser) checkEnvFromHost(c *Check, s *rawSettings, at fieldPath) error {
	if len(c.EnvFromHost) == 0 {
		return nil
	}
	where := at.key("env_from_host")
	inherited := ""
	if s.EnvFromHost == nil {
		inherited = " (inherited from defaults)"
	}
	if c.Runtime != "process" {
		return p.errf(where, "only a runtime: process check can take variables from the harness%s; a %s check gets exactly its env", inherited, c.Runtime)
	}
	for _, k := range c.EnvFromHost {
		if _, both := c.Env[k]; both {
			return p.errf(where, "%q is also set in env; declare it in one place", k)
		}
	}
	return nil
}
