package run

// openSessions lists the run's open agent sessions (kernel/replay's
// session view); planImplemented refuses a successor while any is open.
func (r *Run) openSessions() []string {
	return nil
}
