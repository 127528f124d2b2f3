package run

// openSessions lists the run's open agent sessions (the replay's session
// view); planImplemented refuses a successor while any is open, before the
// replay would refuse the supersession itself.
func (r *Run) openSessions() []string {
	var open []string
	for _, s := range r.Report().Sessions {
		if s.Open {
			open = append(open, s.ID)
		}
	}
	return open
}
