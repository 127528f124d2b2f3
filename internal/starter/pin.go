package starter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/proofgate/proofgate/internal/docker"
	"github.com/proofgate/proofgate/internal/imagepin"
	"github.com/proofgate/proofgate/internal/printable"
)

// MirrorEnv is the environment form of --registry-mirror.
const MirrorEnv = "PROOFGATE_REGISTRY_MIRROR"

// PinOptions say how Pin chooses and pins images.
type PinOptions struct {
	Docker string // --docker IMAGE: every project's image, else each ecosystem's official one
	Mirror string // --registry-mirror: the only registry asked for Docker Hub images
}

// digestRef is an image reference already pinned by digest.
var digestRef = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// Pinned reports whether image is already pinned by digest.
func Pinned(image string) bool { return digestRef.MatchString(image) }

// sourceGiven marks an image --docker already pinned by digest.
const sourceGiven = "given"

// pinner resolves init's images: --docker IMAGE first from the local
// daemon, every other tag from a registry (the --registry-mirror only;
// else the daemon's registry mirrors, then Docker Hub, as dockerd pulls).
type pinner struct {
	mirror string // --registry-mirror or $PROOFGATE_REGISTRY_MIRROR
	daemon *docker.Runtime
	tried  bool
}

func (p *pinner) close() {
	if p.daemon != nil {
		p.daemon.Close()
	}
}

// local connects to the daemon once; nil when none answers.
func (p *pinner) local(ctx context.Context) *docker.Runtime {
	if !p.tried {
		p.tried = true
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if rt, err := docker.New(ctx, docker.WithoutSelfDetection()); err == nil {
			p.daemon = rt
		}
	}
	return p.daemon
}

// remote is the registry resolver: the explicit mirror alone (Docker Hub
// is then never asked), or the daemon's mirrors followed by Docker Hub.
func (p *pinner) remote(ctx context.Context) imagepin.Remote {
	if p.mirror != "" {
		return imagepin.Remote{Mirrors: []string{p.mirror}}
	}
	r := imagepin.Remote{DockerHub: true}
	if d := p.local(ctx); d != nil {
		r.Mirrors, _ = d.RegistryMirrors(ctx)
	}
	return r
}

// given pins --docker IMAGE: as is with a digest; else the local
// daemon's repo digest, or its image ID for an image never pushed; else
// the registry's digest.
func (p *pinner) given(ctx context.Context, image string) (imagepin.Pin, error) {
	if digestRef.MatchString(image) {
		name, d, _ := strings.Cut(image, "@")
		return imagepin.Pin{Image: name, Ref: image, Digest: d, Source: sourceGiven}, nil
	}
	if d := p.local(ctx); d != nil {
		pin, found, err := imagepin.Local(ctx, d, image)
		if err != nil {
			return imagepin.Pin{}, environment(fmt.Errorf("--docker %s: %w", image, err))
		}
		if found {
			return pin, nil
		}
	}
	return p.fromRegistry(ctx, image, "--docker")
}

// fromRegistry pins a tag at a registry; from says why init chose it.
func (p *pinner) fromRegistry(ctx context.Context, image, from string) (imagepin.Pin, error) {
	r := p.remote(ctx)
	pin, err := r.Resolve(ctx, image)
	if err == nil {
		return pin, nil
	}
	var u *imagepin.UnreachableError
	hand := fmt.Sprintf("pin it by hand: docker pull %s && docker images --digests --format '{{.Repository}}:{{.Tag}}@{{.Digest}}' %s, then proofgate init --docker IMAGE@sha256:<digest>", printable.ShellQuote(image), printable.ShellQuote(image))
	if errors.As(err, &u) && u.NotFound() {
		return imagepin.Pin{}, usage(fmt.Errorf("init: %s (%s) does not exist at %s: %w; nothing was written (fix the version, or %s)", image, from, registries(r), err, hand))
	}
	return imagepin.Pin{}, environment(fmt.Errorf("init: cannot pin %s (%s) by digest at %s: %w; nothing was written (check the network or pass --registry-mirror URL / %s=URL, or %s)", image, from, registries(r), err, MirrorEnv, hand))
}

// registries names where r asks for a Docker Hub image.
func registries(r imagepin.Remote) string {
	names := append([]string{}, r.Mirrors...)
	if r.DockerHub || len(names) == 0 {
		names = append(names, "Docker Hub ("+imagepin.DockerHub+")")
	}
	return strings.Join(names, ", then ")
}

// Pin decides each project's image and pins it: --docker's for
// all, else the ecosystem's official image chosen from the project.
func (p *Starter) Pin(ctx context.Context, f PinOptions) error {
	p.Runtime = "docker"
	pn := &pinner{mirror: f.Mirror}
	defer pn.close()
	var given imagepin.Pin
	if f.Docker != "" {
		g, err := pn.given(ctx, f.Docker)
		if err != nil {
			return err
		}
		given = g
	}
	pinned := map[string]imagepin.Pin{}
	var err error
	for i := range p.Projects {
		pr := &p.Projects[i]
		if f.Docker != "" {
			pr.pin, pr.tool = given, toolImage{image: f.Docker, from: "--docker"}
			if pr.kind == "go" {
				_, pr.deps, err = goModule(p.Dir)
			}
			if err != nil {
				return err
			}
			continue
		}
		t, deps, err := projectImage(p.Dir, pr)
		if err != nil {
			return err
		}
		pr.tool, pr.deps = t, deps
		if pin, ok := pinned[t.image]; ok {
			pr.pin = pin
			continue
		}
		if pr.pin, err = pn.fromRegistry(ctx, t.image, t.from); err != nil {
			return err
		}
		pinned[t.image] = pr.pin
	}
	return nil
}

// projectImage chooses a project's official image from its files.
func projectImage(dir string, pr *Project) (toolImage, bool, error) {
	switch pr.kind {
	case "go":
		return goModule(dir)
	case "node":
		t, err := nodeImage(dir, pr.engines)
		return t, false, err
	case "python":
		t, err := pythonImage(dir)
		return t, false, err
	case "rust":
		t, err := rustImage(dir)
		return t, false, err
	}
	return toolImage{}, false, fmt.Errorf("init: no image for %s", pr.kind)
}

// MirrorDefault is --registry-mirror's default.
func MirrorDefault() string { return os.Getenv(MirrorEnv) }
