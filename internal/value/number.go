package value

import (
	"encoding/json"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// parseInt reads an int without rounding: Python literals (4_2, 0x10),
// integral floats (42.0), and, when that fails, a number with thousands
// separators, a currency sign or a unit word (2,161,000; $5; 42 km).
func parseInt(raw string) (whole, error) {
	s := cleanScalar(raw)
	n, ok := readNumber(s)
	if !ok {
		return whole{}, numberError(raw, s, "int")
	}
	return intFromNumber(n, raw)
}

// whole is an integer read exactly: a sign and a magnitude, wide enough
// for every int64 and every uint64 (a uint64 field takes values above
// math.MaxInt64). Zero is never negative, so equal integers compare
// equal.
type whole struct {
	neg bool
	mag uint64
}

// intFromNumber reads a JSON-spelled number as an integer exactly (never
// through a float64, which rounds integers beyond 2^53), in time linear in
// its length: a number with more significant digits than a uint64 holds
// is out of range before any arithmetic, so a reply of a million digits
// costs a scan, not big-number arithmetic (security review round 3, N6).
func intFromNumber(n json.Number, raw string) (whole, error) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		if i < 0 {
			return whole{neg: true, mag: uint64(-(i + 1)) + 1}, nil
		}
		return whole{mag: uint64(i)}, nil
	}
	neg, digits, exp, ok := decimalParts(string(n))
	switch {
	case !ok:
		return whole{}, invalid("%s is not an int", clip(raw))
	case digits == "":
		return whole{}, nil
	case exp < 0:
		return whole{}, invalid("%s is not a whole number", clip(raw))
	case len(digits)+exp > maxUint64Digits:
		return whole{}, invalid("%s is out of range for an int", clip(raw))
	}
	u, err := strconv.ParseUint(digits+strings.Repeat("0", exp), 10, 64)
	if err != nil {
		return whole{}, invalid("%s is out of range for an int", clip(raw))
	}
	return whole{neg: neg, mag: u}, nil
}

// maxUint64Digits is the number of decimal digits of the largest uint64.
const maxUint64Digits = 20

// maxExponent bounds the decimal exponent read: far beyond any int64 or
// float64.
const maxExponent = 400

// decimalParts splits a decimal number ("-12.50e3") into its sign, its
// significant digits without leading or trailing zeros ("125") and the
// power of ten they are multiplied by (2): the value is
// ±digits×10^exp, exactly. Zero has no digits. ok is false for a text that
// is not such a number, or an exponent beyond maxExponent.
func decimalParts(s string) (neg bool, digits string, exp int, ok bool) {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	mant := s
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > maxExponent || e < -maxExponent || strings.HasPrefix(s[i+1:], "+-") {
			return false, "", 0, false
		}
		mant, exp = s[:i], e
	}
	whole, frac, _ := strings.Cut(mant, ".")
	if whole == "" && frac == "" || !allDigits(whole) || !allDigits(frac) {
		return false, "", 0, false
	}
	whole = strings.TrimLeft(whole, "0")
	trimmed := strings.TrimRight(frac, "0")
	exp -= len(trimmed)
	if trimmed == "" {
		trimmed = whole
		whole = ""
		n := len(trimmed)
		trimmed = strings.TrimRight(trimmed, "0")
		exp += n - len(trimmed)
	}
	digits = strings.TrimLeft(whole+trimmed, "0")
	if digits == "" {
		return neg, "", 0, true
	}
	return neg, digits, exp, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// intValue returns n as the int type t, or an error naming t when n is
// out of its range (a negative number for an unsigned type, a number
// above math.MaxInt64 for a signed one).
func intValue(n whole, t reflect.Type, raw string) (reflect.Value, error) {
	v := reflect.New(t).Elem()
	outOfRange := func() error { return invalid("%s is out of range for %s", clip(raw), t) } // made only when it is one
	switch {
	case v.CanInt():
		if n.neg && n.mag > 1<<63 || !n.neg && n.mag > math.MaxInt64 {
			return reflect.Value{}, outOfRange()
		}
		i := int64(n.mag)
		if n.neg {
			i = -i // also right for -2^63, whose magnitude int64 wraps to itself
		}
		if v.OverflowInt(i) {
			return reflect.Value{}, outOfRange()
		}
		v.SetInt(i)
	case v.CanUint():
		if n.neg && n.mag != 0 || v.OverflowUint(n.mag) {
			return reflect.Value{}, outOfRange()
		}
		v.SetUint(n.mag)
	default:
		return reflect.Value{}, invalid("cannot read an int into %s", t)
	}
	return v, nil
}

func parseFloat(raw string) (float64, error) {
	s := cleanScalar(raw)
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case "inf", "infinity", "nan":
		f, _ := strconv.ParseFloat(s, 64)
		return f, nil
	}
	n, ok := readNumber(s)
	if !ok {
		if f, ok := fraction(s); ok {
			return f, nil
		}
		return 0, numberError(raw, s, "float")
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return 0, invalid("%s is out of range for a float", clip(raw))
	}
	return f, nil
}

func numberError(raw, s, kind string) error {
	if strings.HasSuffix(s, "%") {
		return invalid("%s is a percentage: write the %s itself, the scale is ambiguous", clip(raw), kind)
	}
	return invalid("%s is not %s", clip(raw), WithArticle(kind))
}

// readNumber reads a number: a Python literal, a decorated number, a
// number word ("Eight"), each also hedged ("Approximately 1450", "1450 or
// so", "probably 1450") or followed by a remark in parentheses that holds
// no other number ("1450 (the census is old)").
func readNumber(s string) (json.Number, bool) {
	for range 4 {
		if n, ok := pyNumber(s); ok {
			return n, true
		}
		if n, ok := decoratedNumber(s); ok {
			return n, true
		}
		if n, ok := numberWord(s); ok {
			return n, true
		}
		t := s
		if m := hedgeRE.FindStringIndex(t); m != nil {
			t = t[m[1]:]
		}
		if m := trailingHedgeRE.FindStringIndex(t); m != nil {
			t = t[:m[0]]
		}
		if i := strings.LastIndexByte(t, '('); i > 0 && strings.HasSuffix(strings.TrimRight(t, ". "), ")") && !alternativeRE.MatchString(t[i:]) {
			t = t[:i]
		}
		t = cleanScalar(strings.TrimRight(strings.TrimSpace(t), ".,;"))
		if t == s || t == "" {
			return "", false
		}
		s = t
	}
	return "", false
}

var (
	numberDecorRE   = regexp.MustCompile(`^([+-]?)[$€£¥]?\s*((?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?|\.[0-9]+)(?:\s*([A-Za-z]{2,}|[A-Za-z]{2,}/[A-Za-z]+)\.?)?$`)
	scaleWords      = map[string]bool{"hundred": true, "thousand": true, "million": true, "billion": true, "trillion": true, "mn": true, "bn": true, "mm": true, "dozen": true, "lakh": true, "crore": true}
	hedgeRE         = regexp.MustCompile(`(?i)^(?:approximately|approx\.?|about|around|roughly|circa|ca\.|c\.|~|≈|an estimated|estimated|est\.|probably|likely|most likely|possibly|perhaps|maybe|presumably|i think|i believe|i estimate|i'd estimate|an approximate|some|exactly|precisely|a total of|in total|total of)\s*`)
	alternativeRE   = regexp.MustCompile(`(?i)^\(\s*[-+~$]?[0-9]|\b(?:or|maybe|perhaps|possibly|either|alternatively|otherwise|might|could|up to|unless|if not)\b|\b(?:though|although|but|while|whereas|others?|some)\b[^)]*[0-9]|[0-9][^)]*\b(?:possible|likely|also|too)\b`)
	trailingHedgeRE = regexp.MustCompile(`(?i)\s*(?:or so|or thereabouts|-?ish|approximately|approx\.?|roughly|\(approx\.?\)|\(approximately\)|\(estimated?\)|\(est\.\)|in total|total|exactly)\.?$`)
	fractionRE      = regexp.MustCompile(`^([+-]?[0-9]{1,15})\s*/\s*([0-9]{1,15})$`)
	smallWords      = map[string]int{"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
		"eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19}
	tensWords = map[string]int{"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
)

// numberWord reads an English number word from zero to ninety-nine
// ("Eight", "forty-two", "Twenty one"). Larger numbers in words are not
// read: models write those in digits.
func numberWord(s string) (json.Number, bool) {
	if len(s) > 20 {
		return "", false
	}
	w := strings.Fields(strings.ToLower(strings.ReplaceAll(strings.TrimRight(s, ".!"), "-", " ")))
	neg := len(w) > 1 && (w[0] == "minus" || w[0] == "negative")
	if neg {
		w = w[1:]
	}
	n := 0
	switch {
	case len(w) == 1:
		v, ok := smallWords[w[0]]
		if !ok {
			if v, ok = tensWords[w[0]]; !ok {
				return "", false
			}
		}
		n = v
	case len(w) == 2:
		t, ok1 := tensWords[w[0]]
		u, ok2 := smallWords[w[1]]
		if !ok1 || !ok2 || u == 0 || u > 9 {
			return "", false
		}
		n = t + u
	default:
		return "", false
	}
	if neg {
		n = -n
	}
	return json.Number(strconv.Itoa(n)), true
}

// fraction reads "1/36" as a float (never as an int: that would round).
func fraction(s string) (float64, bool) {
	m := fractionRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	a, err1 := strconv.ParseFloat(m[1], 64)
	b, err2 := strconv.ParseFloat(m[2], 64)
	if err1 != nil || err2 != nil || b == 0 {
		return 0, false
	}
	return a / b, true
}

// decoratedNumber reads a number with thousands separators, a currency
// sign or a unit word. Scale words (million, k) are refused: they change
// the value.
func decoratedNumber(s string) (json.Number, bool) {
	m := numberDecorRE.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	if scaleWords[strings.ToLower(m[3])] || trailingBounds[strings.ToLower(m[3])] {
		return "", false // "42 million", "42 max": not a unit
	}
	num := strings.ReplaceAll(m[2], ",", "")
	if strings.HasPrefix(num, ".") {
		num = "0" + num
	}
	return json.Number(m[1] + num), true
}
