package serve_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/serve"
	"github.com/sigwire/adapter/signature"
)

// A module served over HTTP: POST its inputs as JSON, get its outputs.
func ExampleHandler() {
	lm := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"))
	defer lm.Close()
	sig, _ := signature.Parse("question -> answer")
	h := &serve.Handler{Module: predict.NewModule(sig), LM: lm.Client(), Logger: slog.New(slog.DiscardHandler)}
	srv := httptest.NewServer(h) // in a service: http.ListenAndServe(":8080", h)
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/predict", "application/json", strings.NewReader(`{"question": "Capital of France?"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status)
	fmt.Println(string(body)[:30])
	// Output:
	// 200 OK
	// {"outputs":{"answer":"Paris"},
}
