package registry

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
)

// helper is a credential helper as docker runs them: `get`, the server on
// stdin, JSON on stdout, or "credentials not found in native keychain"
// and exit 1. It logs each server it is asked about to $HELPER_LOG.
const helper = `#!/bin/sh
server=$(cat)
echo "$1 $server" >> "$HELPER_LOG"
case "$server" in
registry.example.com|https://index.docker.io/v1/)
  echo '{"ServerURL":"'"$server"'","Username":"helper-user","Secret":"helper-pass"}' ;;
token.example.com)
  echo '{"ServerURL":"token.example.com","Username":"<token>","Secret":"id-token"}' ;;
locked.example.com)
  echo "the keychain is locked" >&2; exit 2 ;;
garbled.example.com)
  echo 'not json' ;;
*)
  echo "credentials not found in native keychain"; exit 1 ;;
esac
`

func basic(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

func TestFindCredentials(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "docker-credential-fake"), []byte(helper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	cases := map[string]struct {
		config string // config.json; none when empty
		image  string
		want   Credentials
		// asked are the servers the helper was asked about.
		asked   []string
		wantErr string
	}{
		"no config":  {image: "registry.example.com/op:v1"},
		"no entry":   {config: `{"auths":{"other.example.com":{"auth":"` + basic("a", "b") + `"}}}`, image: "registry.example.com/op:v1"},
		"auth":       {config: `{"auths":{"registry.example.com":{"auth":"` + basic("ann", "s3:cret") + `"}}}`, image: "registry.example.com/op:v1", want: Credentials{Username: "ann", Password: "s3:cret"}},
		"user, pass": {config: `{"auths":{"registry.example.com":{"username":"bob","password":"pw"}}}`, image: "registry.example.com/op:v1", want: Credentials{Username: "bob", Password: "pw"}},
		"auth wins over user and pass": {config: `{"auths":{"registry.example.com":{"auth":"` + basic("ann", "x") + `","username":"bob","password":"pw"}}}`,
			image: "registry.example.com/op:v1", want: Credentials{Username: "ann", Password: "x"}},
		"identity token": {config: `{"auths":{"registry.example.com":{"identitytoken":"tok"}}}`, image: "registry.example.com/op:v1", want: Credentials{IdentityToken: "tok"}},
		"registry token": {config: `{"auths":{"registry.example.com":{"registrytoken":"rt"}}}`, image: "registry.example.com/op:v1", want: Credentials{RegistryToken: "rt"}},
		"a URL key":      {config: `{"auths":{"https://registry.example.com/v1/":{"auth":"` + basic("old", "style") + `"}}}`, image: "registry.example.com/op:v1", want: Credentials{Username: "old", Password: "style"}},
		"a port":         {config: `{"auths":{"localhost:5000":{"auth":"` + basic("l", "p") + `"}}}`, image: "localhost:5000/op:v1", want: Credentials{Username: "l", Password: "p"}},
		"the repository's own entry first": {config: `{"auths":{"registry.example.com":{"auth":"` + basic("all", "x") + `"},"registry.example.com/team/op":{"auth":"` + basic("team", "y") + `"}}}`,
			image: "registry.example.com/team/op:v1", want: Credentials{Username: "team", Password: "y"}},
		"docker hub's key": {config: `{"auths":{"https://index.docker.io/v1/":{"auth":"` + basic("hub", "pw") + `"}}}`, image: "busybox:1.37", want: Credentials{Username: "hub", Password: "pw"}},
		"a helper for the registry": {config: `{"auths":{"registry.example.com":{"auth":"` + basic("file", "x") + `"}},"credHelpers":{"registry.example.com":"fake"}}`,
			image: "registry.example.com/op:v1", want: Credentials{Username: "helper-user", Password: "helper-pass"}, asked: []string{"get registry.example.com"}},
		"the store":      {config: `{"credsStore":"fake"}`, image: "token.example.com/op:v1", want: Credentials{IdentityToken: "id-token"}, asked: []string{"get token.example.com/op", "get token.example.com"}},
		"the store, hub": {config: `{"credsStore":"fake"}`, image: "busybox:1.37", want: Credentials{Username: "helper-user", Password: "helper-pass"}, asked: []string{"get index.docker.io/library/busybox", "get https://index.docker.io/v1/"}},
		"helper over store": {config: `{"credsStore":"missing","credHelpers":{"registry.example.com":"fake","registry.example.com/op":"fake"}}`,
			image: "registry.example.com/op:v1", want: Credentials{Username: "helper-user", Password: "helper-pass"}, asked: []string{"get registry.example.com/op", "get registry.example.com"}},
		// As the docker CLI: with a store, the file's auths are not read.
		"the store has nothing": {config: `{"credsStore":"fake","auths":{"nothing.example.com":{"auth":"` + basic("file", "x") + `"}}}`,
			image: "nothing.example.com/op:v1", asked: []string{"get nothing.example.com/op", "get nothing.example.com"}},
		"a helper that fails":    {config: `{"credsStore":"fake"}`, image: "locked.example.com/op:v1", wantErr: "docker-credential-fake get locked.example.com: exit status 2: the keychain is locked"},
		"a helper that garbles":  {config: `{"credsStore":"fake"}`, image: "garbled.example.com/op:v1", wantErr: "docker-credential-fake get garbled.example.com: invalid character"},
		"a helper not installed": {config: `{"credsStore":"nope"}`, image: "registry.example.com/op:v1", wantErr: `docker-credential-nope get registry.example.com/op: exec: "docker-credential-nope": executable file not found`},
		"a broken config":        {config: `{"auths":`, image: "registry.example.com/op:v1", wantErr: "config.json: unexpected end of JSON input"},
		"a broken auth":          {config: `{"auths":{"registry.example.com":{"auth":"%%%"}}}`, image: "registry.example.com/op:v1", wantErr: `auths "registry.example.com": auth is not base64`},
		"an auth without colon":  {config: `{"auths":{"registry.example.com":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("nocolon")) + `"}}}`, image: "registry.example.com/op:v1", wantErr: "auth is not base64 of user:password"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("DOCKER_CONFIG", dir)
			log := filepath.Join(dir, "helper.log")
			t.Setenv("HELPER_LOG", log)
			if tc.config != "" {
				if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(tc.config), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := resolve(t, tc.image)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one holding %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("credentials (-want +got):\n%s", diff)
			}
			logged, _ := os.ReadFile(log)
			var asked []string
			for _, l := range strings.Split(string(logged), "\n") {
				if l != "" {
					asked = append(asked, l)
				}
			}
			if diff := cmp.Diff(tc.asked, asked); diff != "" {
				t.Errorf("the helper was asked (-want +got):\n%s", diff)
			}
		})
	}
}

// resolve is what the registry lookup sends for image.
func resolve(t *testing.T, image string) (Credentials, error) {
	t.Helper()
	ref, err := name.ParseReference(image)
	if err != nil {
		t.Fatal(err)
	}
	return FindCredentials(context.Background(), ref.Context())
}

// TestHomeConfig: without DOCKER_CONFIG, ~/.docker/config.json.
func TestHomeConfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("DOCKER_CONFIG", "")
	if err := os.MkdirAll(filepath.Join(home, ".docker"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := `{"auths":{"registry.example.com":{"auth":"` + basic("home", "pw") + `"}}}`
	if err := os.WriteFile(filepath.Join(home, ".docker", "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := resolve(t, "registry.example.com/op:v1")
	if err != nil || got != (Credentials{Username: "home", Password: "pw"}) {
		t.Errorf("got %+v, %v", got, err)
	}
}

// TestBounds: a config file or a helper's answer past its bound is an
// error, not read.
func TestBounds(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	big := `{"auths":{"x":{"auth":"` + strings.Repeat("A", maxConfigSize) + `"}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := resolve(t, "registry.example.com/op:v1"); err == nil || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
		t.Errorf("a config past %d bytes: %v", maxConfigSize, err)
	}

	bin := t.TempDir()
	chatty := "#!/bin/sh\ncat >/dev/null\nhead -c 200000 /dev/zero | tr '\\0' a\n"
	if err := os.WriteFile(filepath.Join(bin, "docker-credential-chatty"), []byte(chatty), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"credsStore":"chatty"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := resolve(t, "registry.example.com/op:v1"); err == nil || !strings.Contains(err.Error(), "an answer larger than 65536 bytes") {
		t.Errorf("a helper's answer past %d bytes: %v", maxHelperOut, err)
	}
}

// TestHelperThatHangs: a helper that never answers is stopped when the
// lookup's context ends (install's registry lookup bounds it).
func TestHelperThatHangs(t *testing.T) {
	dir, bin := t.TempDir(), t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	if err := os.WriteFile(filepath.Join(bin, "docker-credential-slow"), []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"credsStore":"slow"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference("registry.example.com/op:v1")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := FindCredentials(ctx, ref.Context()); err == nil || !strings.Contains(err.Error(), "docker-credential-slow get registry.example.com/op: no answer in time") {
		t.Errorf("got %v, want the helper stopped", err)
	}
}
