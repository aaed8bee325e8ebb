// Package jsonx finds the JSON value in a model's reply and repairs it
// within bounds. Extraction and the truncation check are linear scans;
// repair (kaptinlin/jsonrepair) runs only on the extracted span, only when
// strict decoding failed, only under MaxRepair bytes and MaxDepth levels,
// and its output is re-validated. Cursor reads documents of a known shape
// (a stream's events) without building values, leaving anything else to
// encoding/json.
package jsonx
