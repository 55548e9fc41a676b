package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/pramkit/pramkit/beam/internal/beamtest"
	"github.com/pramkit/pramkit/beam/stage"
	"github.com/pramkit/pramkit/pkg/cli"
)

// fakeS3 is an S3 endpoint in memory with the calls Beam's s3 filesystem
// makes: ListObjectsV2, HeadObject, GetObject, PutObject (single part: our
// files are under the uploader's 5 MiB part), DeleteObject. Requests come
// path-style (the SDK addresses a bucket by path on an IP endpoint).
type fakeS3 struct {
	t     *testing.T
	mu    sync.Mutex
	objs  map[string][]byte // "bucket/key"
	mod   map[string]time.Time
	calls map[string]int
}

type s3Object struct {
	Key          string
	Size         int64
	LastModified string
}

type s3List struct {
	XMLName     xml.Name `xml:"ListBucketResult"`
	Name        string
	Prefix      string
	KeyCount    int
	IsTruncated bool
	Contents    []s3Object
}

func (s *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	name := bucket + "/" + key
	notFound := func() {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		if r.Method != http.MethodHead {
			fmt.Fprintf(w, "<Error><Code>NoSuchKey</Code><Message>no such key</Message><Key>%s</Key></Error>", key)
		}
	}
	head := func(b []byte) {
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.Header().Set("Last-Modified", s.mod[name].UTC().Format(http.TimeFormat))
		w.Header().Set("ETag", fmt.Sprintf(`"%x"`, len(b)))
	}
	switch {
	case r.Method == http.MethodGet && key == "" && r.URL.Query().Get("list-type") == "2":
		s.calls["ListObjectsV2"]++
		prefix := r.URL.Query().Get("prefix")
		out := s3List{Name: bucket, Prefix: prefix}
		for n, b := range s.objs {
			if k, ok := strings.CutPrefix(n, bucket+"/"); ok && strings.HasPrefix(k, prefix) {
				out.Contents = append(out.Contents, s3Object{Key: k, Size: int64(len(b)), LastModified: s.mod[n].UTC().Format(time.RFC3339)})
			}
		}
		slices.SortFunc(out.Contents, func(a, b s3Object) int { return strings.Compare(a.Key, b.Key) })
		out.KeyCount = len(out.Contents)
		w.Header().Set("Content-Type", "application/xml")
		xml.NewEncoder(w).Encode(out)
	case r.Method == http.MethodHead:
		s.calls["HeadObject"]++
		b, ok := s.objs[name]
		if !ok {
			notFound()
			return
		}
		head(b)
	case r.Method == http.MethodGet:
		s.calls["GetObject"]++
		b, ok := s.objs[name]
		if !ok {
			notFound()
			return
		}
		head(b)
		w.Write(b)
	case r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") == "":
		s.calls["PutObject"]++
		if enc := r.Header.Get("Content-Encoding"); strings.Contains(enc, "aws-chunked") {
			s.t.Errorf("PutObject %s: content encoding %q", name, enc)
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		s.objs[name], s.mod[name] = b, time.Now()
		w.Header().Set("ETag", fmt.Sprintf(`"%x"`, len(b)))
	case r.Method == http.MethodDelete:
		s.calls["DeleteObject"]++
		delete(s.objs, name)
		w.WriteHeader(http.StatusNoContent)
	default:
		s.t.Errorf("fake S3: unexpected %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusNotImplemented)
	}
}

// s3Env points the AWS SDK's default configuration at endpoint with dummy
// credentials (none when creds is false) and no shared config files or
// instance metadata.
func s3Env(t *testing.T, endpoint string, creds bool) {
	t.Setenv("AWS_ENDPOINT_URL", endpoint)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_PROFILE", "")
	// Send a plain body (no aws-chunked trailer checksum) as any
	// S3-compatible store accepts.
	t.Setenv("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
	t.Setenv("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required")
	key, secret := "", ""
	if creds {
		key, secret = "AKIDTEST", "secret"
	}
	t.Setenv("AWS_ACCESS_KEY_ID", key)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_SESSION_TOKEN", "")
}

// TestS3EstimateThroughAFakeEndpoint: s3:// is linked into pramkit-beam;
// estimate on Prism with its input shards and its output on a fake S3
// endpoint (AWS_ENDPOINT_URL, AWS_REGION, credentials from the
// environment) writes what it writes from and to local paths, and
// removes its intermediate counts object.
func TestS3EstimateThroughAFakeEndpoint(t *testing.T) {
	beam.Init()
	store := &fakeS3{t: t, objs: map[string][]byte{}, mod: map[string]time.Time{}, calls: map[string]int{}}
	srv := httptest.NewServer(store)
	defer srv.Close()
	s3Env(t, srv.URL, true)

	rel, dir := beamtest.AdultRelease(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	beamtest.Split(t, rel, f("shard-0.parquet"), f("shard-1.parquet"))
	for _, n := range []string{"shard-0.parquet", "shard-1.parquet"} {
		b, err := os.ReadFile(f(n))
		if err != nil {
			t.Fatal(err)
		}
		store.objs["bkt/in/"+n], store.mod["bkt/in/"+n] = b, time.Now()
	}
	ctx := context.Background()
	var o1, o2 strings.Builder
	args := []string{"--method", "inverse"}
	if err := stage.Estimate(ctx, stage.Config{Input: f("shard-*.parquet"), Output: f("local"), Runner: "prism", Args: args, Streams: &cli.Streams{Out: &o1, Err: &o1}}); err != nil {
		t.Fatalf("%v: %s", err, o1.String())
	}
	if err := stage.Estimate(ctx, stage.Config{Input: "s3://bkt/in/shard-*.parquet", Output: "s3://bkt/out/est", Runner: "prism", Args: args, Streams: &cli.Streams{Out: &o2, Err: &o2}}); err != nil {
		t.Fatalf("%v: %s", err, o2.String())
	}
	stage.PurgeFetched()
	if strings.ReplaceAll(o1.String(), f("local"), "s3://bkt/out/est") != o2.String() {
		t.Errorf("stdout %q, from local paths %q", o2.String(), o1.String())
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	for _, ext := range []string{".csv", ".counts.csv"} {
		want, err := os.ReadFile(f("local" + ext))
		if err != nil {
			t.Fatal(err)
		}
		if got := store.objs["bkt/out/est"+ext]; !bytes.Equal(got, want) || len(want) < 100 {
			t.Errorf("s3://bkt/out/est%s: %d bytes, differs from the local run's %d", ext, len(got), len(want))
		}
	}
	if _, ok := store.objs["bkt/out/est.counts.txt"]; ok {
		t.Errorf("the pipeline's counts object was left")
	}
	// Each input object is read once (the fetch cache), though the
	// driver reads its metadata and the workers its rows; the third read
	// is the pipeline's counts object.
	t.Logf("calls: %v", store.calls)
	if store.calls["GetObject"] != 3 || store.calls["ListObjectsV2"] == 0 || store.calls["PutObject"] < 3 {
		t.Errorf("calls: %v", store.calls)
	}
}

// TestS3WithoutCredentialsIsAOneLineError: an s3:// glob reaches the s3
// filesystem (not an unknown scheme), and without credentials the listing
// fails with a one-line usage error naming the glob.
func TestS3WithoutCredentialsIsAOneLineError(t *testing.T) {
	beam.Init()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request without credentials reached the endpoint: %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	s3Env(t, srv.URL, false)
	err := stage.Estimate(context.Background(), stage.Config{Input: "s3://bkt/in/x-*.csv", Output: t.TempDir() + "/o", Runner: "prism", Streams: &cli.Streams{Out: io.Discard, Err: io.Discard}})
	if err == nil || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "scheme") || !strings.Contains(err.Error(), "s3://bkt/in/x-*.csv") || !strings.Contains(strings.ToLower(err.Error()), "credentials") {
		t.Errorf("got %q", err)
	}
	t.Log(err)
}
