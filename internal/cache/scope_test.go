package cache

import (
	"strings"
	"testing"
)

const (
	mainHead = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1" // the default branch's head
	prHead   = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2" // a pull request's head
	main     = "refs/heads/main"
)

// push is a consistent push of after to ref on a repository whose default
// branch is main, bound to after.
func push(ref, after string) Facts {
	return Facts{Event: "push", Ref: ref, SHA: after, DefaultBranch: "main", PayloadRef: ref, PayloadAfter: after, Commit: after}
}

// onMain is an event GitHub fires on the default branch (GITHUB_REF main,
// GITHUB_SHA its head) whose run bound commit.
func onMain(event, commit string) Facts {
	f := Facts{Event: event, Ref: main, SHA: mainHead, DefaultBranch: "main", Commit: commit}
	if event == "workflow_dispatch" {
		f.PayloadRef = main
	}
	return f
}

// TestScopeFor: the scope follows facts a pull request cannot choose and
// the commit the run binds. Only a run bound to the head GitHub states for
// the default branch writes default; a doubt (a payload that disagrees, an
// unknown default branch or event) gives a private scope.
func TestScopeFor(t *testing.T) {
	with := func(f Facts, edit func(*Facts)) Facts { edit(&f); return f }
	for _, tc := range []struct {
		name string
		f    Facts
		want Scope
	}{
		{"pull_request", Facts{Event: "pull_request", PR: 7, Ref: "refs/pull/7/merge", Commit: prHead}, PullRequest(7)},
		{"pull_request_target on main, PR head bound", Facts{Event: "pull_request_target", PR: 7, Ref: main, SHA: mainHead, DefaultBranch: "main", Commit: prHead}, PullRequest(7)},
		{"push to main", push(main, mainHead), Default()},
		{"push to main, SHA-256 repository", push(main, strings.Repeat("ab", 32)), Default()},
		{"push to topic", push("refs/heads/topic", prHead), Branch("refs/heads/topic")},
		{"push of a tag", push("refs/tags/v1", mainHead), Branch("refs/tags/v1")},
		{"push to main, unknown default branch", with(push(main, mainHead), func(f *Facts) { f.DefaultBranch = "" }), Branch(main)},
		{"push to main, default branch trunk", with(push(main, mainHead), func(f *Facts) { f.DefaultBranch = "trunk" }), Branch(main)},
		{"push to main, PR head bound", with(push(main, mainHead), func(f *Facts) { f.Commit = prHead }), Commit(prHead)},
		{"push payload of topic, GITHUB_REF main", with(push(main, prHead), func(f *Facts) { f.PayloadRef = "refs/heads/topic" }), Commit(prHead)},
		{"push payload without a ref", with(push(main, mainHead), func(f *Facts) { f.PayloadRef = "" }), Commit(mainHead)},
		{"push payload after differs from GITHUB_SHA", with(push(main, prHead), func(f *Facts) { f.PayloadAfter = mainHead }), Commit(prHead)},
		{"push to main, refs/heads/ prefix missing", with(push("main", mainHead), func(*Facts) {}), Branch("main")},
		{"issue_comment, main's head bound", onMain("issue_comment", mainHead), Default()},
		{"issue_comment, PR head bound", onMain("issue_comment", prHead), Commit(prHead)},
		{"workflow_run, main's head bound", onMain("workflow_run", mainHead), Default()},
		{"workflow_run, PR head bound", onMain("workflow_run", prHead), Commit(prHead)},
		{"schedule, PR head bound", onMain("schedule", prHead), Commit(prHead)},
		{"repository_dispatch, main's head bound", onMain("repository_dispatch", mainHead), Default()},
		{"workflow_dispatch on main, its head bound", onMain("workflow_dispatch", mainHead), Default()},
		{"workflow_dispatch on main, PR head bound", onMain("workflow_dispatch", prHead), Commit(prHead)},
		{"workflow_dispatch, payload ref topic", with(onMain("workflow_dispatch", mainHead), func(f *Facts) { f.PayloadRef = "refs/heads/topic" }), Commit(mainHead)},
		{"workflow_dispatch on topic, its head bound", Facts{Event: "workflow_dispatch", Ref: "refs/heads/topic", SHA: prHead, DefaultBranch: "main", PayloadRef: "refs/heads/topic", Commit: prHead}, Branch("refs/heads/topic")},
		{"issue_comment on topic (never fired so)", with(onMain("issue_comment", prHead), func(f *Facts) { f.Ref, f.SHA = "refs/heads/topic", prHead }), Commit(prHead)},
		{"deployment on main, its head bound", onMain("deployment", mainHead), Commit(mainHead)},
		{"merge_group", Facts{Event: "merge_group", Ref: "refs/heads/gh-readonly-queue/main/pr-7-" + prHead, SHA: prHead, DefaultBranch: "main", Commit: prHead}, Commit(prHead)},
		{"unknown event", onMain("some_future_event", mainHead), Commit(mainHead)},
		{"no event name", onMain("", mainHead), Commit(mainHead)},
		{"GITHUB_SHA empty", with(onMain("issue_comment", mainHead), func(f *Facts) { f.SHA = "" }), Commit(mainHead)},
	} {
		got, err := ScopeFor(tc.f)
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v %v, want %+v", tc.name, got, err, tc.want)
		}
		if err == nil && !validScope(got.Name) {
			t.Errorf("%s: %s is not a valid scope", tc.name, got.Name)
		}
	}
	for _, f := range []Facts{
		{},
		{PR: -1, Commit: mainHead},
		onMain("push", ""),
		onMain("push", "HEAD"),
		onMain("push", strings.ToUpper(mainHead)),
		onMain("push", mainHead[:39]),
		onMain("push", "../"+mainHead[3:]),
	} {
		if sc, err := ScopeFor(f); err == nil {
			t.Errorf("%+v: %+v accepted", f, sc)
		}
	}
	for _, s := range []string{"pr-0", "pr-07", "../x", "commit-", "commit-" + mainHead[:39], "commit-" + strings.ToUpper(mainHead), "commit-../" + mainHead[3:]} {
		if validScope(s) || prunableScope(s) {
			t.Errorf("%q accepted", s)
		}
	}
	for _, s := range []string{Branch("x").Name, Commit(mainHead).Name, PullRequest(7).Name} {
		if !validScope(s) || !prunableScope(s) {
			t.Errorf("%q refused", s)
		}
	}
}
