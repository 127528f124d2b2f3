// Package contract loads ProofGate contracts (contract v1): it parses YAML
// or JSON, validates the document against the published JSON Schema
// (docs/schema/contract.v1.json, embedded here as SchemaJSON), applies
// defaults and a profile, enforces the semantic rules the schema cannot
// express, and returns a Resolved contract whose RFC 8785 canonical JSON is
// a run's frozen contract.json and whose SHA-256 is the contract hash.
//
// # Reading
//
// Files larger than MaxFileSize (1 MiB), non-regular files and invalid
// UTF-8 are refused. The YAML must hold exactly one document. YAML anchors,
// aliases and merge keys (<<) are refused (no billion laughs), as are
// duplicate keys, non-string keys, custom tags, non-finite numbers and
// nesting deeper than 32 levels. Unquoted YAML scalars keep their YAML
// types: run: [sleep, 3] is refused because 3 is a number, and
// env: {X: 0} because 0 is not a string — quote them.
//
// # Errors
//
// Every failure is an *Error naming the file and the field path:
//
//	contract.yaml: checks[2].timeout: "10 minutes" is not a duration
//	contract.yaml: profiles.quick.checks[0].id: unknown check "x"
//	contract.yaml: defaults.resources.memory: "2GB2" is not a size: unknown unit (...)
//
// A YAML syntax error names the line and column of the mistake instead
// (Error.Line, Error.Column), as a second parser (goccy/go-yaml, reading
// only a document go.yaml.in/yaml/v3 refused) locates it; yaml/v3 names the
// line where the enclosing construct starts:
//
//	contract.yaml:5:1: invalid YAML: found character '\t' that cannot start any token
//
// Only the first error is reported, deterministically: YAML problems
// first, then the schema violation that comes first in the file (by line
// and column), then semantic problems in a fixed order (defaults, checks in
// file order, criteria, references, dependency cycles, caches, tools in
// file order, policy, approval, budget, then every profile in name order).
//
// # Format
//
// Top level (unknown fields anywhere are refused):
//
//	field      type                 required  notes
//	version    integer              yes       must be 1
//	name       string (1..1024)     yes
//	defaults   settings             no        inherited by every check
//	checks     [check] (1..256)     yes       ids unique
//	criteria   [{id, text}] (..1024) no       ids unique
//	approval   approval             no        default {required: 1, roles: [write, maintain, admin], allow_commit_authors: false}
//	budget     {max_duration}       no        duration for the whole run; 0 or absent = none
//	profiles   map name → profile   no        names ^[a-z0-9][a-z0-9_-]{0,62}$, at most 64
//	caches     map name → {mount, lifetime} no  names ^[a-z0-9][a-z0-9_-]{0,62}$, at most 16; lifetime persistent (default) | run; see Caches
//	tools      [tool] (..256)       no        names ^[a-z][a-z0-9_-]{0,63}$, unique; see Tools
//	policy     [rule] (..1024)      no        ordered; see Tools
//	authorization {required: bool}  no        required: true holds a run short of COMPLETE until a target is authorized (proofgate authorize)
//	benchmark  {suite, task}        no        ids ^[a-z0-9][a-z0-9._-]{0,62}$; binds runs to a benchmark task (docs/SPEC.md §10)
//	cleanup    [path] (..64)        no        roots 'proofgate clean' may empty; relative, no .., never .git or .proofgate (docs/SPEC.md §10)
//	retention  {archive_after, blob_min_age} no  prune's base ages, at least 1d and 1m; flags may only lengthen them (docs/SPEC.md §13)
//
// Settings (in defaults and in each check; a profile check override may
// set only pull, timeout, output_limit, network, workspace, resources,
// tmpfs, workspace_size, allow_root and mounts, see Profiles):
//
//	field         type              built-in default  notes
//	runtime       docker|process    docker            docker requires image (error at checks[i].image)
//	image         string            —                 a distribution reference (lowercase name[:tag][@sha256:hex]);
//	                                                  <placeholders> refused; no digest: Resolved.Warnings
//	pull          never|missing|always never
//	timeout       duration          10m               "0" = none
//	output_limit  size              1MiB              per stream, > 0
//	network       none|host         none
//	workspace     readonly|copy|none readonly
//	resources     {memory: size, cpus: number, pids: integer}
//	                                {2GiB, 2, 512}    overlaid field by field; cpus > 0, ≤ 1024, at most
//	                                                  three decimals (Resolved in thousandths: 0.5 → 500)
//	tmpfs         size              64MiB             > 0 (0 would mean unlimited to Docker)
//	workspace_size size             1GiB              > 0; bounds a copy-mode workspace (the copy plus
//	                                                  what the check writes); resolved only for
//	                                                  workspace: copy, absent from other checks
//	env           map string→string —                 keys ^[A-Za-z_][A-Za-z0-9_]*$; overlaid key by key;
//	                                                  nothing from the harness is inherited
//	allow_root    bool              false
//	mounts        [{source, target, writable}]  none  the list replaces the inherited one
//
// A check is settings plus:
//
//	id          ^[a-z0-9][a-z0-9._-]{0,62}$ (required)
//	run         argv: non-empty array of strings, argv[0] non-empty (required); a
//	            shell string is refused; arguments are passed literally
//	dir         working directory relative to the repository root; no "..", not absolute
//	criteria    [criterion id], each declared under criteria
//	depends_on  [check id]; unknown, self and cyclic references are refused (the cycle is named)
//	evidence    "structured" (the check reports {status, criteria, artifacts} on stdout)
//	caches      [name | {name, readonly}] (..16): declared caches the check mounts;
//	            a name is a writable use, {name, readonly: true} a read-only one
//	produces    [path glob] (1..64): the files the check produces (ADR 0039), from the
//	            repository root; read out of the workspace after it passes and attested
//	            as subjects; a docker check needs workspace: copy
//
// Durations are Go duration strings without sign ("90s", "10m", "1h30m").
// Sizes are a whole, non-negative number of bytes up to 1 TiB, written as
// an integer or as a decimal with a unit B, KB, MB, GB, TB (powers of 1000)
// or KiB, MiB, GiB, TiB (powers of 1024): "512KiB", "1MiB", "1.5GB".
//
// Mounts: source is absolute, or relative to the workspace without "..";
// target is absolute and neither "/" nor under /proc, /sys or /dev; targets
// are unique per check. The Docker socket must never be mounted: a source
// whose cleaned form or symlink resolution ends in docker.sock, is
// /var/run/docker.sock or /run/docker.sock or a directory containing them
// (/, /var, /run, /var/run), or that exists and is a unix socket, is
// refused. Relative sources are judged by name at load time; the Docker
// runtime must call CheckMountSource with the real workspace before
// mounting.
//
// Approval: required is 0..10; roles are distinct values of read, triage,
// write, maintain, admin (stored in that order); allow_commit_authors is a
// bool. approval.rules (rules.go; docs/SPEC.md §1 "Approval rules") are
// named rules with if/requires/options, combined by approval.mode (and,
// the default, or or), plus approval.disapproval teams; path globs are
// internal/pathglob's and refused at load when they could leave the
// repository (a ".." segment, a leading "/"); team slugs are org/slug,
// title_matches is RE2, rule names are unique. A profile cannot set them.
// Without rules the resolved approval has none of these members, so the
// hash is unchanged. kernel/approval evaluates them.
//
// # Caches
//
// caches: {go-build: {mount: /cache/go-build}} declares a cache; a check
// lists it to mount it. A mount is absolute and clean, not "/", and
// overlaps (equals, covers or lies under) neither /workspace, /tmp,
// /home/sandbox, /etc/hosts, /proc, /sys, /dev, another cache's mount nor
// the check's own mount targets. Refused: an undeclared or repeated name in
// a check, a declared cache no check names, caches on a process-runtime
// check. Caches are not settings: defaults and profiles cannot set them.
// Resolved.Caches is sorted by name and Check.Caches keeps the list order;
// both are omitted when empty, so a contract without caches keeps its hash.
// Which directory a use mounts (its scope) is decided at run time by
// internal/cache.
//
// lifetime: run (ADR 0032) makes a cache that starts empty in every run
// and is removed when the run's checks are done: an install's output
// (node_modules, a virtualenv, target/) carried to the checks that depend
// on it. It is the only kind whose mount may lie under /workspace —
// strictly under it, and then every check that mounts it needs workspace:
// copy (refused otherwise, at checks[i].caches[j], or at a profile's
// workspace that narrows it). A read-only use of a run cache by a check
// that depends (directly or not) on no check writing it is refused: it
// would read an empty tree or race the install. lifetime: persistent
// resolves to the absent
// field, so contracts written before lifetimes keep their hash.
//
// # Tools
//
// tools: declares what an agent session may call (docs/SPEC.md §1, "Tools
// and policy"). A tool is {name, description, run, params, stdin} plus the
// execution settings of a check, resolved from defaults by the same code
// (applySettings, setRun, setDir, checkImage) but env_from_host, which a
// tool neither has nor inherits. run is an argv template: an element that
// is exactly "{{p}}" is replaced by parameter p's value as one element; p
// must be declared and required; "{{" anywhere else, and a template as the
// program, are refused. params maps a name to {type: string | integer |
// boolean | path, required, description, max_length, pattern, enum};
// max_length and pattern apply to string and path (max_length resolves to
// 4096 when absent), enum to string only, and every enum value must pass
// the parameter's own bounds. A parameter run does not name needs
// stdin: json (the canonical arguments object on standard input); stdin:
// none resolves to "". policy: is an ordered list of {id, tool, effect:
// allow | block | require-approval, reason}: tool names a declared tool,
// id defaults to rule-<index> and is unique, "default" is reserved.
// Descriptions and reasons are printable text on one line. Both sections
// are omitted from the resolved contract when empty, so the hash of a
// contract without them is unchanged; a profile cannot set either.
//
// # Profiles
//
// A profile is {extends, checks, approval, budget}. A workflow, which a
// pull request can edit, chooses the profile, so a profile must never
// weaken a check: a profile tunes limits and tightens isolation; it cannot
// change run, dir, runtime, image, env, criteria, depends_on or evidence.
// Setting any of those in a profile check is refused with its path
// (profiles.quick.checks[0].run: a profile cannot change run: ...), even
// when the value equals the base's. Parse(file, data, P) resolves P's
// extends chain root-first (base ← ancestor ← … ← P); each layer overlays
// checks by id with the same merge rules as above for pull, timeout,
// output_limit, network, workspace, resources, tmpfs, workspace_size,
// allow_root and mounts. A profile cannot drop a check: there is no field for it.
// Refused, with the path of the offending field: an unknown profile (the
// known names are listed), an extends cycle (named), an unknown or
// twice-overridden check id, and anything looser than the base contract:
// approval.required below the base's, roles outside the base's,
// allow_commit_authors when the base forbids it, and per check network
// none → host, allow_root false → true, workspace none → readonly/copy
// (readonly and copy are equally strict, both keep writes off the host;
// none is stricter than both), and any mount that the base check does not
// declare, or declares read-only, made writable, and a copy-mode
// workspace_size above the base check's (its declared size, or the
// default). Looseness is judged
// against the base, not the parent profile. Timeouts, output limits,
// resources, tmpfs, pull and budget may change either way.
// Every profile is resolved and checked on every Parse, whichever profile
// was asked for; Resolved.Profile is the profile name ("" for the base).
//
// # Hash
//
// Resolved.Canonical is the RFC 8785 canonical JSON of the resolved
// contract (durations as Go duration strings, sizes and CPU thousandths as
// integers); Resolved.Hash is "sha256:" + its hex SHA-256. Formatting, key
// order, YAML vs JSON and equivalent spellings (600s vs 10m, 1024KiB vs
// 1MiB) do not change the hash; any change to the resolved contract does.
package contract
