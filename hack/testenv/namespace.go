package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Namespace creates a namespace for one test, named after it (a DNS label
// with a suffix that differs from run to run), and deletes it when the test
// ends.
func Namespace(t testing.TB, c client.Client) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", "'", "").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	name = strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
	return name
}
