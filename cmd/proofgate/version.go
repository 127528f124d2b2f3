package main

import (
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/run"
)

// Set at link time by a release build (.goreleaser.yaml, Dockerfile):
//
//	-X main.version=1.2.3 -X main.commit=<full sha> -X main.date=<RFC 3339>
//
// Left empty, they come from the binary's embedded build information: the
// module version of a `go install …@vX.Y.Z` and the vcs.revision and
// vcs.time stamped by a build in a git checkout.
var (
	version string
	commit  string
	date    string
)

// buildInfo is what `proofgate version --json` prints.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	// Modified is true when the checkout the binary was built from had
	// uncommitted changes (vcs.modified); it is only known without ldflags.
	Modified bool `json:"modified,omitempty"`
}

func init() {
	// The planner recorded in run.planned names the same version.
	if v := currentBuild().Version; v != "dev" {
		run.Version = "proofgate/" + v
	}
}

// currentBuild resolves the link-time values, falling back to the embedded
// build information, then to "dev" and "unknown".
func currentBuild() buildInfo {
	b := buildInfo{
		Version:   version,
		Commit:    commit,
		Date:      date,
		GoVersion: goruntime.Version(),
		Platform:  goruntime.GOOS + "/" + goruntime.GOARCH,
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		fillFromBuildInfo(&b, bi)
	}
	b.Version = strings.TrimPrefix(orDefault(b.Version, "dev"), "v")
	b.Commit = orDefault(b.Commit, "unknown")
	b.Date = orDefault(b.Date, "unknown")
	return b
}

// fillFromBuildInfo sets the fields the linker left empty from bi.
func fillFromBuildInfo(b *buildInfo, bi *debug.BuildInfo) {
	if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	ldflags := b.Commit != ""
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision" && b.Commit == "":
			b.Commit = s.Value
		case s.Key == "vcs.time" && b.Date == "":
			b.Date = s.Value
		case s.Key == "vcs.modified" && !ldflags:
			b.Modified = s.Value == "true"
		}
	}
}

// String is the one line `proofgate --version` prints.
func (b buildInfo) String() string {
	return fmt.Sprintf("proofgate %s (commit %s, built %s, %s %s)", b.Version, commitText(b), b.Date, b.GoVersion, b.Platform)
}

func versionCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print the version, commit, build date and Go version",
		Long: `Print the version, the commit the binary was built from, its build date,
the Go version and the platform. A release build sets them at link time; a
'go install' or 'go build' in a git checkout takes them from the build
information Go embeds ("dev" and "unknown" where it has none).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := currentBuild()
			if asJSON {
				return writeJSON(g.stdout, b)
			}
			fmt.Fprintf(g.stdout, "proofgate %s\ncommit:  %s\nbuilt:   %s\ngo:      %s %s\n",
				b.Version, commitText(b), b.Date, b.GoVersion, b.Platform)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func commitText(b buildInfo) string {
	if b.Modified {
		return b.Commit + " (modified)"
	}
	return b.Commit
}

// setVersionFlag gives the root command --version (the one-line form).
func setVersionFlag(root *cobra.Command) {
	b := currentBuild()
	root.Version = b.Version
	// cobra prints the template for --version; the one line is kept in an
	// annotation because the template sees only the command.
	root.SetVersionTemplate("{{with .Annotations}}{{.line}}{{end}}\n")
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations["line"] = b.String()
}
