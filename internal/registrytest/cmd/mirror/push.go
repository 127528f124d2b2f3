package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/proofgate/proofgate/internal/toolimage"
)

// image is one repository to push: how to describe it and under which tags.
type image struct {
	repo string
	tags []string
	spec func(context.Context) (toolimage.Spec, error)
}

func push(args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	reg := fs.String("registry", "127.0.0.1:5391", "registry `host:port` (plain HTTP)")
	cache := fs.String("cache", "", "`directory` of built images (OCI layouts), reused while the inputs are unchanged (required)")
	busybox := fs.String("busybox", toolimage.Busybox, "static busybox `binary` for /bin/sh and the utilities")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cache == "" {
		return errors.New("push: -cache is required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	images, err := toolchains(ctx, *busybox)
	if err != nil {
		return err
	}
	for _, im := range images {
		if err := pushOne(ctx, *reg, toolimage.Cache{Dir: *cache}, im); err != nil {
			return err
		}
	}
	return nil
}

// pushOne builds (or loads from the cache) and pushes one image, then
// checks that every tag resolves to its digest.
func pushOne(ctx context.Context, reg string, cache toolimage.Cache, im image) error {
	start := time.Now()
	spec, err := im.spec(ctx)
	if err != nil {
		return err
	}
	stamp, err := toolimage.Stamp(spec)
	if err != nil {
		return err
	}
	idx, ok, err := cache.Load(spec.Name, stamp)
	if err != nil {
		return err
	}
	how := "from cache"
	if !ok {
		how = "built"
		if idx, err = toolimage.Build(spec); err != nil {
			return err
		}
		if err := cache.Save(spec.Name, stamp, idx); err != nil {
			return err
		}
		if idx, _, err = cache.Load(spec.Name, stamp); err != nil {
			return err
		}
	}
	if err := toolimage.Push(ctx, reg, im.repo, im.tags, idx); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	if err := checkTags(ctx, reg, im, d); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "mirror: %s/%s@%s (%s, %.1fs) tags: %s\n", reg, im.repo, d, how, time.Since(start).Seconds(), strings.Join(im.tags, " "))
	return nil
}

func checkTags(ctx context.Context, reg string, im image, want v1.Hash) error {
	for _, t := range im.tags {
		ref, err := name.NewTag(reg+"/"+im.repo+":"+t, name.Insecure)
		if err != nil {
			return err
		}
		desc, err := remote.Head(ref, remote.WithContext(ctx))
		if err != nil {
			return fmt.Errorf("push: %s: %w", ref, err)
		}
		if desc.Digest != want {
			return fmt.Errorf("push: %s is %s after the push, want %s", ref, desc.Digest, want)
		}
	}
	return nil
}

// toolchains describes the golang and node images from the host's go and
// node, with their tags.
func toolchains(ctx context.Context, busybox string) ([]image, error) {
	goroot, err := output(ctx, "go", "env", "GOROOT")
	if err != nil {
		return nil, err
	}
	gover, err := output(ctx, "go", "env", "GOVERSION")
	if err != nil {
		return nil, err
	}
	gover = strings.TrimPrefix(gover, "go")
	node, npmDir, nodever, err := hostNode(ctx)
	if err != nil {
		return nil, err
	}
	return []image{
		{repo: "library/golang", tags: tags("PROOFGATE_MIRROR_GOLANG_TAGS", "1.15 1.16 1.17 1.18 1.19 1.20 1.21 1.22 1.23 1.24 1.25 1.26 "+gover),
			spec: func(ctx context.Context) (toolimage.Spec, error) {
				return toolimage.GoSpec(ctx, busybox, goroot, "linux_"+goruntime.GOARCH, gover)
			}},
		{repo: "library/node", tags: tags("PROOFGATE_MIRROR_NODE_TAGS", "18 20 22 24 "+nodever),
			spec: func(ctx context.Context) (toolimage.Spec, error) {
				return toolimage.NodeSpec(ctx, busybox, node, npmDir, nodever)
			}},
	}, nil
}

// hostNode finds the node binary on PATH, npm's package directory (where
// the npm on PATH links to: DIR/bin/npm-cli.js) and node's version.
func hostNode(ctx context.Context) (node, npmDir, version string, err error) {
	if node, err = lookReal("node"); err != nil {
		return "", "", "", err
	}
	cli, err := lookReal("npm")
	if err != nil {
		return "", "", "", err
	}
	npmDir = filepath.Dir(filepath.Dir(cli))
	if _, err := os.Stat(filepath.Join(npmDir, "package.json")); err != nil {
		return "", "", "", fmt.Errorf("push: npm at %s is not inside an npm package directory: %w", cli, err)
	}
	version, err = output(ctx, node, "--version")
	return node, npmDir, strings.TrimPrefix(version, "v"), err
}

func lookReal(cmd string) (string, error) {
	p, err := exec.LookPath(cmd)
	if err == nil {
		p, err = filepath.EvalSymlinks(p)
	}
	if err != nil {
		return "", fmt.Errorf("push: %s: %w (the images are built from the host's toolchains)", cmd, err)
	}
	return p, nil
}

func tags(env, def string) []string {
	if v := strings.TrimSpace(os.Getenv(env)); v != "" {
		return strings.Fields(v)
	}
	return strings.Fields(def)
}

func output(ctx context.Context, cmd string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, cmd, args...).Output()
	if err != nil {
		return "", fmt.Errorf("push: %s %s: %w", cmd, strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
