// Command xml asks for a list and a struct through the XML adapter and
// prints the request's reminder and the typed result.
//
// With OPENAI_API_KEY set it calls the live model (OPENAI_BASE_URL and
// OPENAI_MODEL are honoured; the model defaults to gpt-4o-mini). Without
// it, it runs against an lmtest server with a recorded reply, which shows
// what the parser recovers: an unescaped & and a forgotten closing tag.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"reflect"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// Book is one recommendation.
type Book struct {
	Title  string `json:"title"`
	Author string `json:"author"`
	Year   int    `json:"year"`
}

const recorded = `<reasoning>Classic detective fiction & its heirs.
<books><item><title>The Hound of the Baskervilles</title><author>Arthur Conan Doyle</author><year>1902</year></item><item><title>Murder on the Orient Express</title><author>Agatha Christie</author><year>1934</year></item></books>
<keywords><item>mystery</item><item>detective</item></keywords>`

func main() {
	sig, err := signature.New("Recommend books for the reader.",
		[]signature.Field{{Name: "taste", Desc: "what the reader likes"}},
		[]signature.Field{
			{Name: "reasoning"},
			{Name: "books", Type: reflect.TypeFor[[]Book]()},
			{Name: "keywords", Type: reflect.TypeFor[[]string]()},
		})
	if err != nil {
		log.Fatal(err)
	}
	model := os.Getenv("OPENAI_MODEL")
	if model == "" {
		model = "gpt-4o-mini"
	}
	var lm adapter.LM
	if key := os.Getenv("OPENAI_API_KEY"); key != "" {
		cfg := openai.DefaultConfig(key)
		if base := os.Getenv("OPENAI_BASE_URL"); base != "" {
			cfg.BaseURL = base
		}
		lm = openai.NewClientWithConfig(cfg)
	} else {
		srv := lmtest.NewServer(lmtest.Text(recorded))
		defer srv.Close()
		lm = srv.Client()
		fmt.Println("OPENAI_API_KEY is not set: using an lmtest server with a recorded reply.")
	}
	in := adapter.Values{"taste": "old detective novels"}
	msgs, err := adapter.XML{}.Format(sig, nil, in)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("----- user -----\n%s\n\n", msgs[len(msgs)-1].Content)
	res, err := adapter.Call(context.Background(), lm, sig, nil, in, adapter.UseAdapter(adapter.XML{}),
		adapter.WithRequest(openai.ChatCompletionRequest{Model: model, Temperature: adapter.ZeroTemperature}))
	if err != nil {
		log.Fatal(err)
	}
	out := res.Outputs[0]
	fmt.Printf("reasoning: %s\n", out["reasoning"])
	for _, b := range out["books"].([]Book) {
		fmt.Printf("- %s, %s (%d)\n", b.Title, b.Author, b.Year)
	}
	fmt.Printf("keywords: %v\n", out["keywords"])
}
