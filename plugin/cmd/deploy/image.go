package deploy

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/templates"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/waitfor"
)

// ImageService is the name of the one service of an app deployed with
// --image.
const ImageService = "web"

// ImageFlags make an app of one image, without a template.
type ImageFlags struct {
	Image    string
	Port     int32
	Env      []string
	Replicas int32
	Public   bool
	Internal bool

	env []schedv1.EnvVar
}

// imageFlags are the flags that take --image; templateFlags those that
// take --template.
var (
	imageFlags    = []string{"port", "env", "replicas", "public", "internal"}
	templateFlags = []string{"set", "values", "template-dir"}
)

// AddFlags registers the flags.
func (f *ImageFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Image, "image", "", "Run this image as the app's one service, "+ImageService+", without a template.")
	fs.Int32Var(&f.Port, "port", 8080, "With --image: the port the image listens on, where the app's URL routes.")
	fs.StringArrayVar(&f.Env, "env", nil, "With --image: set an environment variable, NAME=VALUE (repeatable). Secret values go in --secret.")
	fs.Int32Var(&f.Replicas, "replicas", 1, "With --image: how many pods run the image. A redeploy without it keeps the app's replicas.")
	fs.BoolVar(&f.Public, "public", false, "With --image: route the app's URL to the service (the default).")
	fs.BoolVar(&f.Internal, "internal", false, "With --image: no URL; the service is reachable from the app's own pods.")
}

func (f *ImageFlags) exposure() schedv1.Exposure {
	if f.Internal {
		return schedv1.ExposureInternal
	}
	return schedv1.ExposurePublic
}

// envName is the UserDeployment's pattern for an env var's name.
var envName = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)

// validateImage checks the flags that go with --image, or without it.
func (o *Options) validateImage() error {
	f := &o.Image
	if o.Template != "" {
		for _, name := range imageFlags {
			if o.changed[name] {
				return cmdutil.Usage("A template's values are given with --set; --"+name+" goes with --image.", "--%s cannot be used with --template", name)
			}
		}
		return nil
	}
	for _, name := range templateFlags {
		if o.changed[name] {
			return cmdutil.Usage("With --image give the environment with --env NAME=VALUE and secrets with --secret NAME=VALUE.", "--%s cannot be used with --image: it gives a template's values", name)
		}
	}
	switch {
	case f.Image == "" || strings.ContainsFunc(f.Image, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return cmdutil.Usage("Give an image reference, such as --image nginx:1.27.", "bad --image %q: an image reference is not empty and has no spaces or control characters", printing.Line(f.Image))
	case f.Public && f.Internal:
		return cmdutil.Usage("Give one of them: --public (the default) routes a URL to the app, --internal does not.", "--public and --internal cannot be used together")
	case f.Port < 1 || f.Port > 65535:
		return cmdutil.Usage("Give the port the image listens on, such as --port 8080.", "--port must be between 1 and 65535, got %d", f.Port)
	case f.Replicas < 0:
		return cmdutil.Usage("Give 0 or more.", "--replicas must not be negative, got %d", f.Replicas)
	}
	f.env = nil
	for _, item := range f.Env {
		name, value, ok := strings.Cut(item, "=")
		if !ok || !envName.MatchString(name) || len(name) > 128 {
			return cmdutil.Usage("Write --env NAME=VALUE; a name has letters, digits, '_', '-' and '.', and does not start with a digit.",
				"bad --env %q: want NAME=VALUE", printing.Line(item))
		}
		// A later one wins, as with --set.
		for i := range f.env {
			if f.env[i].Name == name {
				f.env = append(f.env[:i], f.env[i+1:]...)
				break
			}
		}
		f.env = append(f.env, schedv1.EnvVar{Name: name, Value: value})
	}
	return nil
}

// fromImage makes the app of one service, web, that runs --image, and the
// Secret of its --secret values, which the service gets as environment
// variables.
func (o *Options) fromImage(ctx context.Context) (*schedv1.UserDeployment, *corev1.Secret, error) {
	f, ns := &o.Image, o.Clients.Namespace
	// Every secret already there is kept: with no template, no parameter
	// says which belong.
	if err := o.keepSecrets(ctx, func(string) bool { return true }); err != nil {
		return nil, nil, err
	}
	svc := schedv1.ServiceSpec{
		Name:     ImageService,
		Image:    f.Image,
		Exposure: f.exposure(),
		Ports:    []schedv1.ServicePort{{Name: "http", Port: f.Port}},
		Env:      f.env,
		// Running once it accepts connections, as Knative's default.
		ReadinessProbe: &schedv1.Probe{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(f.Port)}},
	}
	if o.changed["replicas"] {
		svc.Replicas = &f.Replicas
	}
	ud := &schedv1.UserDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: schedv1.GroupVersion.String(), Kind: udKind.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: ns},
		Spec:       schedv1.UserDeploymentSpec{Services: []schedv1.ServiceSpec{svc}},
	}
	if len(o.secrets) == 0 {
		return ud, nil, nil
	}
	// As a template's Secret of secret parameters, without the template.
	secret := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: templates.SecretName(o.Name), Namespace: ns,
			Labels: map[string]string{templates.LabelPartOf: schedv1.ManagedByValue, templates.LabelInstance: o.Name}},
		Type: corev1.SecretTypeOpaque,
		Data: o.secrets,
	}
	ud.Spec.Secrets = []schedv1.SecretReference{{Name: templates.SecretRefName, SecretName: secret.Name}}
	return ud, secret, nil
}

// urlWait bounds how long deploy waits for the operator to report a new
// public app's URL, without --wait.
var urlWait = 10 * time.Second

// printURL prints the URL of a public app once the operator reports it
// for the spec just applied, for up to urlWait.
func (o *Options) printURL(ctx context.Context, ud *schedv1.UserDeployment) {
	ctx, cancel := context.WithTimeout(ctx, urlWait)
	defer cancel()
	var urls []string
	obj := &schedv1.UserDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ud.Namespace, Name: ud.Name}}
	err := waitfor.Object(ctx, o.Clients.Client, obj, &schedv1.UserDeploymentList{}, func(u *schedv1.UserDeployment) (bool, error) {
		if u.Status.ObservedGeneration < ud.Generation {
			return false, nil
		}
		urls = u.Status.URLs
		return true, nil
	})
	switch {
	case len(urls) > 0:
		fmt.Fprintf(o.msgOut(), "URL: %s\n", printing.Line(strings.Join(urls, " ")))
	case err == nil:
		fmt.Fprintf(o.msgOut(), "URL: none; 'kubectl sched describe ud %s%s' says why\n", o.Name, o.nsFlag())
	default:
		fmt.Fprintf(o.msgOut(), "URL: not reported yet (is the operator running?); 'kubectl sched get ud %s%s' shows it once it is\n", o.Name, o.nsFlag())
	}
}
