package registry

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

// Credentials are what the docker CLI would send a registry.
type Credentials struct {
	Username, Password string
	// IdentityToken is an OAuth2 refresh token, traded at the registry's
	// token server for an access token.
	IdentityToken string
	// RegistryToken is sent as the bearer token itself.
	RegistryToken string
}

// Bounds on what FindCredentials reads: the config file, and a credential
// helper's run and its answer.
const (
	maxConfigSize = 1 << 20
	helperTimeout = 10 * time.Second
	maxHelperOut  = 64 << 10
)

// dockerHubKey is the key the docker CLI files Docker Hub's credentials
// under, for historical reasons.
var dockerHubKey = "https://" + name.DefaultRegistry + "/v1/"

// tokenUsername is the user name a credential helper answers with when its
// secret is an identity token.
const tokenUsername = "<token>"

// config is the part of config.json that holds credentials.
type config struct {
	Auths       map[string]authEntry `json:"auths"`
	CredsStore  string               `json:"credsStore"`
	CredHelpers map[string]string    `json:"credHelpers"`
}

type authEntry struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// FindCredentials finds repo's credentials where the docker CLI keeps
// them: $DOCKER_CONFIG/config.json, or ~/.docker/config.json. Each of
// repo's own entry, then its registry's, is looked up as the docker CLI
// does: its credential helper, else the credentials store, else the auths
// entry. None (nor a config) means anonymous: empty Credentials. A
// credential helper runs until ctx ends, helperTimeout at most.
func FindCredentials(ctx context.Context, repo name.Repository) (Credentials, error) {
	path, cfg, err := load()
	if err != nil || cfg == nil {
		return Credentials{}, err
	}
	for _, key := range []string{repo.String(), repo.RegistryStr()} {
		if key == name.DefaultRegistry {
			key = dockerHubKey
		}
		c, err := cfg.lookup(ctx, key)
		if err != nil {
			return Credentials{}, fmt.Errorf("%s: %w", path, err)
		}
		if c != (Credentials{}) {
			return c, nil
		}
	}
	return Credentials{}, nil
}

// load reads the config file, nil when there is none.
func load() (string, *config, error) {
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", nil, nil
		}
		dir = filepath.Join(home, ".docker")
	}
	path := filepath.Join(dir, "config.json")
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return path, nil, nil
	}
	if err != nil {
		return path, nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return path, nil, err
	}
	if len(data) > maxConfigSize {
		return path, nil, fmt.Errorf("%s is larger than %d bytes", path, maxConfigSize)
	}
	cfg := &config{}
	if err := json.Unmarshal(data, cfg); err != nil {
		return path, nil, fmt.Errorf("%s: %w", path, err)
	}
	return path, cfg, nil
}

// lookup finds key's credentials as the docker CLI does: its credential
// helper, else the credentials store, else the auths entry filed under
// key or under a URL of the same host.
func (c *config) lookup(ctx context.Context, key string) (Credentials, error) {
	helper := c.CredsStore
	if h, ok := c.CredHelpers[key]; ok {
		helper = h
	}
	if helper != "" {
		return runHelper(ctx, helper, key)
	}
	e, ok := c.Auths[key]
	if !ok {
		for k, v := range c.Auths {
			if hostname(k) == key {
				e, ok = v, true
				break
			}
		}
	}
	if !ok {
		return Credentials{}, nil
	}
	ac := Credentials{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken}
	if e.Auth != "" {
		user, pass, err := decodeAuth(e.Auth)
		if err != nil {
			return Credentials{}, fmt.Errorf("auths %q: %w", key, err)
		}
		ac.Username, ac.Password = user, pass
	}
	return ac, nil
}

// decodeAuth reads an auths entry's auth: base64 of "user:password".
func decodeAuth(auth string) (user, pass string, err error) {
	b, err := base64.StdEncoding.DecodeString(auth)
	if err != nil {
		return "", "", fmt.Errorf("auth is not base64: %w", err)
	}
	user, pass, ok := strings.Cut(string(b), ":")
	if !ok {
		return "", "", errors.New("auth is not base64 of user:password")
	}
	return user, pass, nil
}

// hostname is the host of an auths key written as a URL
// ("https://registry.example.com/v1/" is registry.example.com), as the
// docker CLI reads keys of older config files.
func hostname(key string) string {
	if strings.Contains(key, "://") {
		if u, err := url.Parse(key); err == nil && u.Hostname() != "" {
			if u.Port() == "" {
				return u.Hostname()
			}
			return u.Hostname() + ":" + u.Port()
		}
	}
	host, _, _ := strings.Cut(key, "/")
	return host
}

// notFound is what credential helpers say on stdout, exiting 1, when they
// hold nothing for the server.
const notFound = "credentials not found in native keychain"

// runHelper asks docker-credential-NAME for key's credentials: `get`, the
// server on stdin, JSON on stdout.
func runHelper(ctx context.Context, helper, key string) (Credentials, error) {
	ctx, cancel := context.WithTimeout(ctx, helperTimeout)
	defer cancel()
	program := "docker-credential-" + helper
	cmd := exec.CommandContext(ctx, program, "get")
	cmd.Stdin = strings.NewReader(key)
	var out, errOut limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		if strings.TrimSpace(out.String()) == notFound {
			return Credentials{}, nil
		}
		said := strings.TrimSpace(strings.Join(strings.Fields(out.String()+" "+errOut.String()), " "))
		switch {
		case ctx.Err() != nil:
			said = fmt.Sprintf("no answer in time (%s at most)", helperTimeout)
		case said == "":
			said = err.Error()
		default:
			said = err.Error() + ": " + said
		}
		return Credentials{}, fmt.Errorf("%s get %s: %s", program, key, said)
	}
	if out.full {
		return Credentials{}, fmt.Errorf("%s get %s: an answer larger than %d bytes", program, key, maxHelperOut)
	}
	var creds struct{ Username, Secret string }
	if err := json.Unmarshal(out.b.Bytes(), &creds); err != nil {
		return Credentials{}, fmt.Errorf("%s get %s: %w", program, key, err)
	}
	if creds.Username == tokenUsername {
		return Credentials{IdentityToken: creds.Secret}, nil
	}
	return Credentials{Username: creds.Username, Password: creds.Secret}, nil
}

// limitedBuffer keeps the first maxHelperOut bytes written to it. It is
// only a Writer (no ReadFrom), so exec's copy goes through Write.
type limitedBuffer struct {
	b    bytes.Buffer
	full bool
}

// Write takes all of p, so the helper is not cut off, and keeps what fits.
func (l *limitedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := maxHelperOut - l.b.Len(); n > room {
		l.full = true
		p = p[:max(room, 0)]
	}
	l.b.Write(p)
	return n, nil
}

func (l *limitedBuffer) String() string { return l.b.String() }
