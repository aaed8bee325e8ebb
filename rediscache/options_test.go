package rediscache_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sigwire/adapter/rediscache"
)

// TestOptionKinds: each option is typed by what it configures, so that one
// given to a constructor it does not configure does not compile: a
// Cache's own options are Options only, a Limiter's LimiterOptions only, a
// Budget's BudgetOptions only, and the options on how any of them uses
// Redis are SharedOptions, all three.
func TestOptionKinds(t *testing.T) {
	for name, c := range map[string]struct {
		o                      any
		cache, limiter, budget bool
	}{
		"WithPrefix":                 {rediscache.WithPrefix("p:"), true, true, true},
		"WithTimeout":                {rediscache.WithTimeout(time.Second), true, true, true},
		"WithCooldown":               {rediscache.WithCooldown(time.Second), true, true, true},
		"WithOnError":                {rediscache.WithOnError(nil), true, true, true},
		"WithTTL":                    {rediscache.WithTTL(time.Hour), true, false, false},
		"WithMaxEntryBytes":          {rediscache.WithMaxEntryBytes(1), true, false, false},
		"WithSigningSecret":          {rediscache.WithSigningSecret(nil), true, false, false},
		"WithLogger":                 {rediscache.WithLogger(nil), true, false, false},
		"WithLease":                  {rediscache.WithLease(time.Second), true, false, false},
		"WithFallback":               {rediscache.WithFallback(rediscache.RateLimit{}), false, true, false},
		"WithMaxWait":                {rediscache.WithMaxWait(time.Second), false, true, false},
		"WithBlockWithoutRetryAfter": {rediscache.WithBlockWithoutRetryAfter(time.Second), false, true, false},
		"WithWindow":                 {rediscache.WithWindow(time.Hour), false, false, true},
		"WithMaxHold":                {rediscache.WithMaxHold(time.Hour), false, false, true},
		"WithFailOpen":               {rediscache.WithFailOpen(), false, false, true},
	} {
		_, cache := c.o.(rediscache.Option)
		_, limiter := c.o.(rediscache.LimiterOption)
		_, budget := c.o.(rediscache.BudgetOption)
		_, shared := c.o.(rediscache.SharedOption)
		assert.Equal(t, c.cache, cache, "%s is an Option", name)
		assert.Equal(t, c.limiter, limiter, "%s is a LimiterOption", name)
		assert.Equal(t, c.budget, budget, "%s is a BudgetOption", name)
		assert.Equal(t, c.cache && c.limiter && c.budget, shared, "%s is a SharedOption", name)
	}
}
