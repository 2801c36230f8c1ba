// Command consume runs EchoMQ's published bundle from Go, as a Go runtime would: it reads the
// bundle with the standard library (gzip, tar, JSON), checks every script's SHA1 against the
// manifest, and drives a job's life against a real Redis with redigo, whose Script sends
// EVALSHA and loads the body on NOSCRIPT. Keys come from the manifest's templates, arguments by
// the manifest's names (defaults and roles filled as its header says), and a failure code is
// named by the manifest's table. It prints a JSON report and exits 1 on any mismatch.
//
// usage: consume <bundle.tar.gz> <redis port> <queue>
package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

type key struct {
	Name     string `json:"name"`
	Template string `json:"template"`
}

type arg struct {
	Name    string          `json:"name"`
	Default json.RawMessage `json:"default"`
	Role    string          `json:"role"`
}

type script struct {
	Name    string `json:"name"`
	File    string `json:"file"`
	SHA1    string `json:"sha1"`
	NumKeys int    `json:"numKeys"`
	Keys    []key  `json:"keys"`
	Argv    []arg  `json:"argv"`
	lua     *redis.Script
}

type code struct {
	Code int64  `json:"code"`
	Name string `json:"name"`
}

type manifest struct {
	Version string    `json:"version"`
	Codes   []code    `json:"codes"`
	Scripts []*script `json:"scripts"`
}

// readBundle gives every file of the bundle by its path below the bundle's top folder.
func readBundle(path string) (map[string][]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	unzipped, err := gzip.NewReader(file)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	archive := tar.NewReader(unzipped)
	for {
		header, err := archive.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if header.Typeflag != tar.TypeReg {
			continue
		}
		body, err := io.ReadAll(archive)
		if err != nil {
			return nil, err
		}
		parts := strings.SplitN(header.Name, "/", 2)
		if len(parts) == 2 {
			files[parts[1]] = body
		}
	}
}

type runtime struct {
	conn    redis.Conn
	queue   string
	scripts map[string]*script
	codes   map[int64]string
}

// call runs a script with its keys built from the templates (`{q}` the queue's tag, `<x>` the
// value of x) and its arguments in ARGV order: each from `values`, else its default, else its
// role (the clock for "now").
func (r *runtime) call(name string, values map[string]interface{}) (interface{}, error) {
	s := r.scripts[name]
	if s == nil {
		return nil, fmt.Errorf("no script %s in the bundle", name)
	}
	params := make([]interface{}, 0, len(s.Keys)+len(s.Argv))
	for _, k := range s.Keys {
		built := strings.Replace(k.Template, "{q}", "{"+r.queue+"}", 1)
		for name, value := range values {
			built = strings.ReplaceAll(built, "<"+name+">", fmt.Sprint(value))
		}
		params = append(params, built)
	}
	for _, a := range s.Argv {
		if value, given := values[a.Name]; given {
			params = append(params, value)
		} else if a.Default != nil {
			var value interface{}
			if err := json.Unmarshal(a.Default, &value); err != nil {
				return nil, err
			}
			params = append(params, encodeDefault(value))
		} else if a.Role == "now" {
			params = append(params, time.Now().UnixMilli())
		} else {
			return nil, fmt.Errorf("%s: argument %s has no value", name, a.Name)
		}
	}
	return s.lua.Do(r.conn, params...)
}

// encodeDefault writes a header's default as the scripts read it: JSON objects and arrays as
// JSON text, booleans as 1 or 0, numbers and strings as they are.
func encodeDefault(value interface{}) interface{} {
	switch v := value.(type) {
	case bool:
		if v {
			return "1"
		}
		return "0"
	case map[string]interface{}, []interface{}:
		text, _ := json.Marshal(v)
		return string(text)
	case float64:
		return int64(v)
	case nil:
		return "null"
	}
	return value
}

// failure names a negative integer reply by the manifest's table; "" for any other reply.
func (r *runtime) failure(reply interface{}) string {
	if n, ok := reply.(int64); ok && n < 0 {
		return r.codes[n]
	}
	return ""
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: consume <bundle.tar.gz> <redis port> <queue>")
		os.Exit(2)
	}
	report, err := run(os.Args[1], os.Args[2], os.Args[3])
	out, _ := json.Marshal(report)
	fmt.Println(string(out))
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(bundlePath, port, queue string) (map[string]interface{}, error) {
	report := map[string]interface{}{}
	files, err := readBundle(bundlePath)
	if err != nil {
		return report, err
	}
	var m manifest
	if err := json.Unmarshal(files["manifest.json"], &m); err != nil {
		return report, err
	}
	report["version"] = m.Version
	rt := &runtime{queue: queue, scripts: map[string]*script{}, codes: map[int64]string{}}
	table := map[string]int64{}
	for _, c := range m.Codes {
		rt.codes[c.Code] = c.Name
		table[c.Name] = c.Code
	}
	report["codes"] = table // the closed table as this runtime holds it
	mismatches := []string{}
	for _, s := range m.Scripts {
		body, found := files[s.File]
		sum := sha1.Sum(body)
		if !found || hex.EncodeToString(sum[:]) != s.SHA1 {
			mismatches = append(mismatches, s.Name)
		}
		s.lua = redis.NewScript(s.NumKeys, string(body))
		rt.scripts[s.Name] = s
	}
	report["scripts"] = len(m.Scripts)
	report["sha1Mismatches"] = mismatches
	if len(mismatches) > 0 {
		return report, fmt.Errorf("SHA1 mismatches: %v", mismatches)
	}
	rt.conn, err = redis.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		return report, err
	}
	defer rt.conn.Close()

	steps := map[string]interface{}{}
	report["steps"] = steps
	added, err := redis.Values(rt.call("addStandardJob", map[string]interface{}{
		"name": "email", "data": `{"to":"a@b.c"}`, "now": 1000,
	}))
	if err != nil {
		return report, err
	}
	jobID, _ := redis.String(added[0], nil)
	steps["add"] = map[string]interface{}{"jobId": jobID, "added": added[1]}

	pickup, err := redis.Values(rt.call("moveToActive", map[string]interface{}{
		"token": "worker:1", "now": 1001,
	}))
	if err != nil {
		return report, err
	}
	picked, _ := redis.String(pickup[0], nil)
	fields, _ := redis.StringMap(pickup[1], nil)
	steps["pickup"] = map[string]interface{}{"jobId": picked, "name": fields["name"]}

	beat, err := redis.Int64(rt.call("extendLock", map[string]interface{}{
		"job_id": jobID, "token": "worker:1", "duration": 30000,
	}))
	if err != nil {
		return report, err
	}
	steps["heartbeat"] = beat

	// A finish with another worker's token: the closed table's -6, named from the manifest.
	wrong, err := rt.call("moveToFinished", map[string]interface{}{
		"job_id": jobID, "token": "worker:2", "now": 1004, "outcome": "completed",
		"result": `"stolen"`,
	})
	if err != nil {
		return report, err
	}
	steps["wrongToken"] = map[string]interface{}{"reply": wrong, "name": rt.failure(wrong)}

	finished, err := redis.Values(rt.call("moveToFinished", map[string]interface{}{
		"job_id": jobID, "token": "worker:1", "now": 1005, "outcome": "completed",
		"result": `"sent"`,
	}))
	if err != nil {
		return report, err
	}
	went, _ := redis.String(finished[0], nil)
	steps["finish"] = went
	state, err := redis.String(rt.call("getJobState", map[string]interface{}{"job_id": jobID}))
	if err != nil {
		return report, err
	}
	steps["state"] = state
	return report, nil
}
