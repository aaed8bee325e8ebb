package predict

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// Program is a program DSPy saved with program.save("x.json"): its
// predictors by path ("predict", "generate_answer.predict", …).
type Program map[string]SavedPredictor

// SavedPredictor is one predictor's saved state.
type SavedPredictor struct {
	Demos     []map[string]json.RawMessage `json:"demos"`
	Signature signature.State              `json:"signature"`
	// LM is the saved LM configuration, without the endpoint keys DSPy
	// itself drops from untrusted files (api_base, base_url, model_list).
	LM map[string]any `json:"lm"`
}

// unsafeLMKeys are the LM keys DSPy drops unless the file is trusted.
var unsafeLMKeys = []string{"api_base", "base_url", "model_list"}

// LoadProgram reads a saved program. The "metadata" member is skipped;
// the LM endpoint keys DSPy treats as unsafe are dropped.
func LoadProgram(r io.Reader) (Program, error) {
	var raw map[string]json.RawMessage
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return nil, fmt.Errorf("predict: saved program: %w", err)
	}
	prog := Program{}
	for k, v := range raw {
		if k == "metadata" {
			continue
		}
		var sp SavedPredictor
		if err := json.Unmarshal(v, &sp); err != nil {
			return nil, fmt.Errorf("predict: saved program: predictor %q: %w", k, err)
		}
		for _, u := range unsafeLMKeys {
			delete(sp.LM, u)
		}
		prog[k] = sp
	}
	return prog, nil
}

// ReadProgram reads a saved program file.
func ReadProgram(path string) (Program, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("predict: %w", err)
	}
	defer f.Close()
	return LoadProgram(f)
}

// Names lists the program's predictor paths, sorted.
func (p Program) Names() []string {
	names := make([]string, 0, len(p))
	for k := range p {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Load returns a copy of m with the saved predictor name's instructions,
// field prefixes and descriptions, and demos (augmented ones included).
// It refuses a predictor whose fields do not line up with m's signature:
// a different number of fields, or demo keys that name no field.
func (m *Module) Load(prog Program, name string) (*Module, error) {
	sp, ok := prog[name]
	if !ok {
		return nil, fmt.Errorf("predict: saved program has no predictor %q (it has %s)", name, strings.Join(prog.Names(), ", "))
	}
	sig, err := m.sig.WithState(sp.Signature)
	if err != nil {
		return nil, fmt.Errorf("predict: predictor %q: %w", name, err)
	}
	demos := make([]adapter.Values, 0, len(sp.Demos))
	for i, d := range sp.Demos {
		vals := adapter.Values{}
		for k, raw := range d {
			if k == "augmented" {
				continue
			}
			f, _, ok := sig.Field(k)
			if !ok {
				return nil, fmt.Errorf("predict: predictor %q: demo %d: %q is not a field of %s", name, i+1, k, sig)
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				return nil, fmt.Errorf("predict: predictor %q: demo %d: %s: %w", name, i+1, k, err)
			}
			if v == nil {
				vals[k] = nil
				continue
			}
			gv, err := value.FromJSON(v, f.Spec)
			if err != nil {
				return nil, fmt.Errorf("predict: predictor %q: demo %d: field %q: %w", name, i+1, k, err)
			}
			vals[k] = gv
		}
		demos = append(demos, vals)
	}
	c := *m
	c.sig, c.cfg.demos = sig, demos
	return &c, nil
}

// Load is Module.Load for a typed Predict.
func (p *Predict[In, Out]) Load(prog Program, name string) (*Predict[In, Out], error) {
	m, err := p.m.Load(prog, name)
	if err != nil {
		return nil, err
	}
	return &Predict[In, Out]{m: m}, nil
}

// Load is Module.Load for a ChainOfThought; DSPy saves its predictor
// under "<name>.predict".
func (c *ChainOfThought[In, Out]) Load(prog Program, name string) (*ChainOfThought[In, Out], error) {
	m, err := c.p.m.Load(prog, name)
	if err != nil {
		return nil, err
	}
	return &ChainOfThought[In, Out]{p: &Predict[In, Out]{m: m}}, nil
}
