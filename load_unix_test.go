//go:build unix

package adapter_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/predict"
)

// inFlight is the number of goroutines calling at once under load.
const inFlight = 256

// serverProcess starts loopbackServer in another process (this test
// binary run as TestLoopbackServerProcess), each reply held for delay,
// so that the figures of this process are the client's alone. It returns
// a client configuration for it; the process ends with the test.
func serverProcess(tb testing.TB, delay time.Duration) openai.ClientConfig {
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoopbackServerProcess$")
	cmd.Env = append(os.Environ(), "LOOPBACK_SERVER=1", "LOOPBACK_DELAY="+delay.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	url, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatal(err)
	}
	cfg := openai.DefaultConfig("test-key")
	cfg.BaseURL = strings.TrimSpace(url)
	return cfg
}

// loadClient is one go-openai client for inFlight concurrent calls: its
// transport keeps a connection per caller (net/http keeps 2 by default,
// and would open and close connections under this load).
func loadClient(cfg openai.ClientConfig) *openai.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = inFlight, inFlight
	cfg.HTTPClient = &http.Client{Transport: tr}
	return openai.NewClientWithConfig(cfg)
}

// benchQA is the reference workload as typed structs.
type (
	benchQuestion struct {
		Question string `json:"question"`
		Context  string `json:"context"`
	}
	benchAnswer struct {
		Reasoning string `json:"reasoning"`
		Answer    string `json:"answer"`
	}
)

// loadPaths are the calls compared under load, on one client: go-openai
// alone sending the Chat request ("baseline"), Call ("chat") and a typed
// predict.Predict ("predict"), all getting the reference completion.
func loadPaths(tb testing.TB, client *openai.Client) []loopbackPath {
	var paths []loopbackPath
	for _, p := range loopbackPaths(client) {
		if p.name == "baseline" || p.name == "chat" {
			paths = append(paths, p)
		}
	}
	p, err := predict.New[benchQuestion, benchAnswer]()
	if err != nil {
		tb.Fatal(err)
	}
	var demos []predict.Demo[benchQuestion, benchAnswer]
	for _, d := range benchDemos {
		demos = append(demos, predict.Demo[benchQuestion, benchAnswer]{
			In:  benchQuestion{d["question"].(string), d["context"].(string)},
			Out: benchAnswer{d["reasoning"].(string), d["answer"].(string)},
		})
	}
	if p, err = p.WithDemos(demos...); err != nil {
		tb.Fatal(err)
	}
	in := benchQuestion{benchInputs["question"].(string), benchInputs["context"].(string)}
	return append(paths, loopbackPath{"predict", func() error {
		out, _, err := p.Call(context.Background(), client, in)
		if err == nil && out.Answer != "100 °C" {
			err = fmt.Errorf("predict: %+v", out)
		}
		return err
	}})
}

// BenchmarkUnderLoad runs each loadPath from inFlight goroutines at once
// through one go-openai client against lmtest in another process over
// loopback: calls/s is the throughput. Profile it with -cpuprofile and
// -mutexprofile (go tool pprof -top).
func BenchmarkUnderLoad(b *testing.B) {
	client := loadClient(serverProcess(b, 0))
	for _, p := range loadPaths(b, client) {
		b.Run(p.name, func(b *testing.B) {
			b.SetParallelism((inFlight + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := p.run(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

// TestUnderLoad measures each loadPath's throughput with inFlight
// goroutines calling at once through one go-openai client against lmtest
// in another process over loopback: calls completed in rounds of a fixed
// time, the paths alternating round by round (in turn forwards and
// backwards); the ratio to go-openai alone is the median of the rounds'
// ratios. It asserts nothing about time. It runs only with LOAD=1:
//
//	LOAD=1 go test -run UnderLoad -v .
func TestUnderLoad(t *testing.T) {
	if os.Getenv("LOAD") == "" {
		t.Skip("set LOAD=1")
	}
	const rounds, span = 7, 2 * time.Second
	client := loadClient(serverProcess(t, 0))
	paths := loadPaths(t, client)
	tput := make([][]float64, len(paths)) // calls per second, by path and round
	for r := range rounds {
		order := slices.Clone(paths)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, p := range order {
			i := slices.IndexFunc(paths, func(q loopbackPath) bool { return q.name == p.name })
			tput[i] = append(tput[i], throughput(t, p, span))
		}
	}
	for i, p := range paths {
		q := quartiles(tput[i])
		t.Logf("%-8s %7.0f calls/s (quartiles %.0f–%.0f), %d goroutines, %d rounds of %v", p.name, q[1], q[0], q[2], inFlight, rounds, span)
		if i > 0 {
			ratio := make([]float64, rounds)
			for r := range ratio {
				ratio[r] = tput[i][r] / tput[0][r]
			}
			q := quartiles(ratio)
			t.Logf("%-8s / %s: %.2f (quartiles %.2f–%.2f)", p.name, paths[0].name, q[1], q[0], q[2])
		}
	}
}

// TestInFlightMemory measures the memory one call in flight holds: live
// heap and goroutine stacks of this process, after a GC, with inFlight
// calls waiting on lmtest in another process that holds each reply for a
// second, over the same figures with none in flight. Each path runs on a
// new client, so the figure holds the call's connection. It asserts
// nothing. It runs only with LOAD=1:
//
//	LOAD=1 go test -run InFlightMemory -v .
func TestInFlightMemory(t *testing.T) {
	if os.Getenv("LOAD") == "" {
		t.Skip("set LOAD=1")
	}
	slow := serverProcess(t, time.Second)
	for i := range loadPaths(t, loadClient(slow)) {
		p := loadPaths(t, loadClient(slow))[i]
		heap, stack := liveBytes()
		var wg sync.WaitGroup
		for range inFlight {
			wg.Go(func() {
				if err := p.run(); err != nil {
					t.Error(err)
				}
			})
		}
		time.Sleep(500 * time.Millisecond) // every call sent, none answered
		heap2, stack2 := liveBytes()
		wg.Wait()
		t.Logf("%-8s %6d bytes per call in flight: %6d of heap, %6d of goroutine stacks (%d calls)",
			p.name, (heap2+stack2-heap-stack)/inFlight, (heap2-heap)/inFlight, (stack2-stack)/inFlight, inFlight)
	}
}

// throughput runs p from inFlight goroutines for span and returns the
// calls completed per second.
func throughput(t *testing.T, p loopbackPath, span time.Duration) float64 {
	var n atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	for range inFlight {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := p.run(); err != nil {
					t.Error(err)
					return
				}
				n.Add(1)
			}
		})
	}
	time.Sleep(span)
	close(stop)
	wg.Wait()
	return float64(n.Load()) / time.Since(start).Seconds()
}

// liveBytes is the live heap and the goroutine stacks after a GC.
func liveBytes() (heap, stack int64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc), int64(m.StackInuse)
}

// quartiles returns the lower quartile, the median and the upper quartile.
func quartiles(x []float64) [3]float64 {
	s := slices.Sorted(slices.Values(x))
	return [3]float64{s[len(s)/4], s[len(s)/2], s[3*len(s)/4]}
}
