// Package registry asks an image registry what `kubectl sched install`
// needs to pin the operator image: the digest a tag points at, with the
// credentials the docker CLI would send (credentials.go). It speaks the
// registry API (the OCI distribution spec: a HEAD of the manifest, and
// the token exchange of a registry that asks for one) itself, so the
// plugin needs neither the docker CLI's modules nor a registry client's.
package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// manifestTypes are the manifests a tag may point at, as Accept asks for
// them: an index (multi-platform) or one image, OCI's or Docker's.
var manifestTypes = strings.Join([]string{
	"application/vnd.oci.image.index.v1+json",
	"application/vnd.docker.distribution.manifest.list.v2+json",
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.docker.distribution.manifest.v2+json",
}, ", ")

// maxTokenResponse bounds a token server's answer.
const maxTokenResponse = 1 << 20

// clientID names the plugin to a token server that trades refresh tokens.
const clientID = "kubectl-sched"

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Digest is the digest the registry serves for tag now (sha256:...). It
// asks as the docker CLI would: anonymously, then, when the registry asks
// for credentials, with FindCredentials'. ctx bounds it all.
func Digest(ctx context.Context, tag name.Tag) (string, error) {
	repo := tag.Context()
	path := "/v2/" + repo.RepositoryStr() + "/manifests/" + tag.TagStr()
	resp, scheme, err := headManifest(ctx, repo.Registry, path, "")
	if err != nil {
		return "", err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		auth, err := authorize(ctx, repo, resp.Header.Get("WWW-Authenticate"))
		if err != nil {
			return "", err
		}
		if resp, err = head(ctx, scheme+"://"+repo.RegistryStr()+path, auth); err != nil {
			return "", err
		}
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden:
		return "", fmt.Errorf("%s refuses %s (%s): check the credentials 'docker login %s' stores", repo.RegistryStr(), tag, resp.Status, repo.RegistryStr())
	case http.StatusNotFound:
		return "", fmt.Errorf("%s has no image %s", repo.RegistryStr(), tag)
	default:
		return "", fmt.Errorf("%s answered %s for %s", repo.RegistryStr(), resp.Status, tag)
	}
	d := resp.Header.Get("Docker-Content-Digest")
	if !digestPattern.MatchString(d) {
		return "", fmt.Errorf("%s answered no sha256 digest for %s (Docker-Content-Digest %q)", repo.RegistryStr(), tag, d)
	}
	return d, nil
}

// headManifest sends the first HEAD over https, and, for a registry that
// may serve plain http (localhost, a loopback or private address, as the
// docker CLI allows), over http when https cannot connect. It returns the
// scheme that answered.
func headManifest(ctx context.Context, reg name.Registry, path, auth string) (*http.Response, string, error) {
	resp, err := head(ctx, "https://"+reg.RegistryStr()+path, auth)
	if err == nil || reg.Scheme() != "http" || ctx.Err() != nil {
		return resp, "https", err
	}
	resp, httpErr := head(ctx, "http://"+reg.RegistryStr()+path, auth)
	if httpErr != nil {
		return nil, "", errors.Join(err, httpErr)
	}
	return resp, "http", nil
}

// head asks for a manifest's headers; its body, if any, is dropped.
func head(ctx context.Context, u, auth string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", manifestTypes)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	_ = resp.Body.Close()
	return resp, nil
}

// authorize answers a registry's WWW-Authenticate challenge with repo's
// credentials: Basic with them as they are, or Bearer with a token its
// token server (the challenge's realm) gives for pulling repo.
func authorize(ctx context.Context, repo name.Repository, challenge string) (string, error) {
	scheme, params := parseChallenge(challenge)
	creds, err := FindCredentials(ctx, repo)
	if err != nil {
		return "", err
	}
	switch strings.ToLower(scheme) {
	case "basic":
		if creds.Username == "" && creds.Password == "" {
			return "", fmt.Errorf("%s asks for credentials and none are stored for it: 'docker login %s' stores them", repo.RegistryStr(), repo.RegistryStr())
		}
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(creds.Username+":"+creds.Password)), nil
	case "bearer":
		if creds.RegistryToken != "" {
			return "Bearer " + creds.RegistryToken, nil
		}
		token, err := fetchToken(ctx, repo, params, creds)
		if err != nil {
			return "", err
		}
		return "Bearer " + token, nil
	}
	return "", fmt.Errorf("%s asks for credentials in a way kubectl sched does not speak (%q)", repo.RegistryStr(), challenge)
}

// fetchToken gets a pull token for repo from the token server: with an
// identity token, the OAuth2 refresh grant (POST); otherwise a GET, with
// Basic credentials when there are some.
func fetchToken(ctx context.Context, repo name.Repository, params map[string]string, creds Credentials) (string, error) {
	realm, err := url.Parse(params["realm"])
	if err != nil || realm.Host == "" || (realm.Scheme != "https" && realm.Scheme != "http") {
		return "", fmt.Errorf("%s names no token server it can be asked at (realm %q)", repo.RegistryStr(), params["realm"])
	}
	scope := params["scope"]
	if scope == "" {
		scope = "repository:" + repo.RepositoryStr() + ":pull"
	}
	var req *http.Request
	if creds.IdentityToken != "" {
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {creds.IdentityToken}, "service": {params["service"]}, "scope": {scope}, "client_id": {clientID}}
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, realm.String(), strings.NewReader(form.Encode()))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	} else {
		q := realm.Query()
		if params["service"] != "" {
			q.Set("service", params["service"])
		}
		q.Set("scope", scope)
		realm.RawQuery = q.Encode()
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, realm.String(), nil)
		if err == nil && (creds.Username != "" || creds.Password != "") {
			req.SetBasicAuth(creds.Username, creds.Password)
		}
	}
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("token server of %s: %w", repo.RegistryStr(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse+1))
	if err != nil {
		return "", fmt.Errorf("token server of %s: %w", repo.RegistryStr(), err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("token server of %s answered %s: check the credentials 'docker login %s' stores", repo.RegistryStr(), resp.Status, repo.RegistryStr())
	}
	if len(body) > maxTokenResponse {
		return "", fmt.Errorf("token server of %s: an answer larger than %d bytes", repo.RegistryStr(), maxTokenResponse)
	}
	var t struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &t); err != nil {
		return "", fmt.Errorf("token server of %s: %w", repo.RegistryStr(), err)
	}
	if t.Token != "" {
		return t.Token, nil
	}
	if t.AccessToken != "" {
		return t.AccessToken, nil
	}
	return "", fmt.Errorf("token server of %s answered no token", repo.RegistryStr())
}

// parseChallenge reads a WWW-Authenticate header: its scheme and its
// key="value" parameters, whose quoted values may hold commas.
func parseChallenge(h string) (string, map[string]string) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	params := map[string]string{}
	for rest = strings.TrimSpace(rest); rest != ""; {
		key, after, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		key = strings.ToLower(strings.TrimSpace(key))
		var value string
		if strings.HasPrefix(after, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(after) && after[i] != '"'; i++ {
				if after[i] == '\\' && i+1 < len(after) {
					i++
				}
				b.WriteByte(after[i])
			}
			value, rest = b.String(), after[min(i+1, len(after)):]
		} else {
			value, rest, _ = strings.Cut(after, ",")
			value = strings.TrimSpace(value)
		}
		params[key] = value
		rest = strings.TrimLeft(rest, ", ")
	}
	return scheme, params
}
