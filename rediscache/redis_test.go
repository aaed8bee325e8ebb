package rediscache_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigwire/adapter/rediscache"
)

// The tests run against a real redis-server. .ci/run installs Debian's,
// starts it on a loopback port and sets SIGWIRE_REDIS_ADDR; the tests that
// stop or pause Redis start their own from PATH. Without
// SIGWIRE_REDIS_ADDR, a redis-server on PATH is started for the package;
// without one either, the tests skip, saying how to run them, except in CI
// (CI or SIGWIRE_REDIS_ADDR set), where they fail.

const howToRun = "no Redis for the rediscache tests: install redis-server (apt-get install redis-server) " +
	"and run them again, or start one (redis-server --port 6390 --save '' --appendonly no --daemonize yes) " +
	"and set SIGWIRE_REDIS_ADDR=127.0.0.1:6390; bash .ci/run does both"

func inCI() bool { return os.Getenv("CI") != "" || os.Getenv("SIGWIRE_REDIS_ADDR") != "" }

// noRedis fails the test in CI and skips it elsewhere.
func noRedis(t testing.TB, why string) {
	t.Helper()
	if inCI() {
		t.Fatalf("%s (in CI the Redis tests must run: .ci/run installs and starts redis-server)", why)
	}
	t.Skip(howToRun + " (" + why + ")")
}

var (
	shared struct {
		once sync.Once
		addr string
		srv  *redisServer
		err  error
	}
	prefixSeq atomic.Int64
)

// quiet drops go-redis's log lines: the tests that stop Redis make it
// print one per failed dial.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// slack is the WithTimeout of tests that are not about timeouts: generous, so
// that a loaded machine never sends them to the fallback.
var slack = rediscache.WithTimeout(10 * time.Second)

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	code := m.Run()
	if shared.srv != nil {
		shared.srv.stop()
	}
	os.Exit(code)
}

// sharedAddr is the Redis most tests use.
func sharedAddr(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() {
		if a := os.Getenv("SIGWIRE_REDIS_ADDR"); a != "" {
			shared.addr = a
			return
		}
		if _, err := exec.LookPath("redis-server"); err != nil {
			shared.err = err
			return
		}
		shared.srv, shared.err = startRedis()
		if shared.srv != nil {
			shared.addr = shared.srv.addr
		}
	})
	if shared.err != nil {
		noRedis(t, shared.err.Error())
	}
	return shared.addr
}

// client returns a client of the shared Redis, checked with a PING.
func client(t testing.TB) *redis.Client {
	t.Helper()
	return dial(t, sharedAddr(t))
}

func dial(t testing.TB, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis at %s does not answer: %v", addr, err)
	}
	return rdb
}

// prefix is a key prefix of the test's own, so that tests sharing a Redis
// never see each other's keys.
func prefix(t testing.TB) string {
	return fmt.Sprintf("sigwire-test:%d:%d:%s:", os.Getpid(), prefixSeq.Add(1), t.Name())
}

// redisServer is a redis-server process of a test's own, which the test
// may stop, restart or pause.
type redisServer struct {
	addr string
	port int
	cmd  *exec.Cmd
}

// privateRedis starts a redis-server for this test alone.
func privateRedis(t testing.TB) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		noRedis(t, "redis-server is not on PATH: "+err.Error())
	}
	srv, err := startRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	return srv
}

func startRedis() (*redisServer, error) {
	var last error
	for range 3 { // a port found free may be taken before the server binds it
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		srv := &redisServer{addr: "127.0.0.1:" + strconv.Itoa(port), port: port}
		if last = srv.start(); last == nil {
			return srv, nil
		}
	}
	return nil, last
}

// start runs redis-server on the server's port and waits until it answers.
func (s *redisServer) start() error {
	s.cmd = exec.Command("redis-server", "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--loglevel", "warning")
	if err := s.cmd.Start(); err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
	defer rdb.Close()
	for range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	s.stop()
	return fmt.Errorf("redis-server on %s did not answer", s.addr)
}

// stop kills the server and waits for it to exit.
func (s *redisServer) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}
