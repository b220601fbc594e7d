package install

import (
	"context"
	"encoding/xml"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/nightwatch-dev/nightwatch/internal/command"
	"github.com/nightwatch-dev/nightwatch/jobs"
)

// The tests of this file run on every platform (Wine included); the ones
// that need sh, crontab or POSIX modes are in worker_unix_test.go.

// workerFixture is the fixture's batch with a cluster: section, and the
// options of its worker.
func workerFixture(t *testing.T, dirName string, w *WorkerOptions) (*fixture, Options) {
	t.Helper()
	f := newFixture(t, dirName)
	f.batch.Cluster = &jobs.Cluster{DatabaseEnv: "NIGHTWATCH_DATABASE_URL"}
	o := f.options()
	o.Now = testNow
	o.Worker = w
	return f, o
}

func planWorker(t *testing.T, kind Kind, o Options) *Plan {
	t.Helper()
	p, err := PlanInstall(kind, o)
	if err != nil {
		t.Fatalf("PlanInstall(%s, worker): %v", kind, err)
	}
	return p
}

// The worker's argv, after the binary, for every scheduler.
func TestWorkerArgs(t *testing.T) {
	for _, tc := range []struct {
		w    WorkerOptions
		want []string
	}{
		{WorkerOptions{}, nil},
		{WorkerOptions{Labels: []string{"linux"}}, []string{"--label", "linux"}},
		{WorkerOptions{Labels: []string{"mac", "gpu.a_1-x"}, MaxParallel: 3}, []string{"--label", "mac", "--label", "gpu.a_1-x", "--max-parallel", "3"}},
		{WorkerOptions{MaxParallel: 1}, []string{"--max-parallel", "1"}},
	} {
		j := &job{file: "/b/night.yaml", worker: &tc.w}
		want := append([]string{"worker", "/b/night.yaml"}, tc.want...)
		if got := j.workerArgs(); !reflect.DeepEqual(got, want) {
			t.Errorf("%+v: %q, want %q", tc.w, got, want)
		}
	}
}

func TestWorkerRefusals(t *testing.T) {
	for _, kind := range Kinds {
		t.Run(string(kind), func(t *testing.T) {
			f := newFixture(t, "b") // no cluster: section
			o := f.options()
			o.Now = testNow
			o.Worker = &WorkerOptions{}
			_, err := PlanInstall(kind, o)
			if err == nil || !strings.Contains(err.Error(), f.batch.File) || !strings.Contains(err.Error(), "no cluster: section") {
				t.Errorf("a worker of a batch without cluster: err = %v; want a refusal naming %s", err, f.batch.File)
			}
			for _, tc := range []struct {
				w    WorkerOptions
				want string
			}{
				{WorkerOptions{Labels: []string{"a b"}}, `label "a b"`},
				{WorkerOptions{Labels: []string{"ok", "$(id)"}}, `label "$(id)"`},
				{WorkerOptions{Labels: []string{""}}, `label ""`},
				{WorkerOptions{Labels: []string{"-x"}}, `label "-x"`},
				{WorkerOptions{Labels: []string{"a..b"}}, `label "a..b"`},
				{WorkerOptions{Labels: []string{strings.Repeat("a", 129)}}, "1–128"},
				{WorkerOptions{MaxParallel: -1}, "--max-parallel -1"},
			} {
				_, o := workerFixture(t, "b", &tc.w)
				if _, err := PlanInstall(kind, o); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%+v: err = %v, want it to mention %q", tc.w, err, tc.want)
				}
			}
			// A worker needs no schedule: it runs all the time.
			f, o = workerFixture(t, "b", &WorkerOptions{})
			f.batch.Schedule = ""
			if _, err := PlanInstall(kind, o); err != nil {
				t.Errorf("a worker of a batch without a schedule: %v", err)
			}
			// The night's own checks still hold for the worker.
			_, o = workerFixture(t, "b", &WorkerOptions{})
			o.Binary = "bin/nightwatch"
			if _, err := PlanInstall(kind, o); err == nil || !strings.Contains(err.Error(), "relative") {
				t.Errorf("a relative binary: err = %v", err)
			}
		})
	}
}

// No scheduler entry of a worker holds the cluster's connection string,
// nor its variable's name; the notes say where it belongs.
func TestWorkerConnectionStringIsNeverWritten(t *testing.T) {
	const dsn = "postgres://nw:pw-9f2c1e@db.lan:5432/nw"
	for _, kind := range Kinds {
		t.Run(string(kind), func(t *testing.T) {
			f, o := workerFixture(t, "night", &WorkerOptions{Labels: []string{"linux"}, MaxParallel: 2})
			f.env["NIGHTWATCH_DATABASE_URL"] = dsn
			p := planWorker(t, kind, o)
			for _, s := range []string{everything(p), printed(p)} {
				if strings.Contains(s, "pw-9f2c1e") {
					t.Errorf("the worker's %s entry or its print holds the connection string:\n%s", kind, s)
				}
			}
			if strings.Contains(everything(p), "NIGHTWATCH_DATABASE_URL") {
				t.Errorf("the worker's %s entry names the connection string's variable:\n%s", kind, everything(p))
			}
			for _, secret := range []string{f.env["API_KEY"], f.env["GITHUB_TOKEN"]} {
				if strings.Contains(everything(p)+printed(p), secret) {
					t.Errorf("a secret value is in the worker's %s entry: %s", kind, secret)
				}
			}
			if notes := strings.Join(p.Notes, "\n"); !strings.Contains(notes, "NOT written") || !strings.Contains(notes, "NIGHTWATCH_DATABASE_URL") {
				t.Errorf("no note says the connection string belongs in the env_file:\n%s", notes)
			}
			delete(f.env, "NIGHTWATCH_DATABASE_URL")
			if notes := strings.Join(planWorker(t, kind, o).Notes, "\n"); !strings.Contains(notes, "cannot reach its database") {
				t.Errorf("no warning that the worker has no connection string:\n%s", notes)
			}
		})
	}
}

// workerTaskSchema is taskSchema with what a worker's task adds.
var workerTaskSchema = func() map[string][]string {
	s := maps.Clone(taskSchema)
	s["Triggers"] = []string{"LogonTrigger"}
	s["LogonTrigger"] = []string{"Enabled", "UserId"}
	s["Settings"] = append(slices.Clone(s["Settings"]), "RestartOnFailure")
	s["RestartOnFailure"] = []string{"Interval", "Count"}
	return s
}()

func checkWorkerSchema(t *testing.T, n *node) {
	t.Helper()
	allowed, known := workerTaskSchema[n.XMLName.Local]
	for _, k := range n.Kids {
		if !known || !slices.Contains(allowed, k.XMLName.Local) {
			t.Errorf("<%s> inside <%s>: not an element a worker's task may hold", k.XMLName.Local, n.XMLName.Local)
			continue
		}
		checkWorkerSchema(t, &k)
	}
}

// parseWorkerTask decodes a worker's task document as parseTask does, with
// the worker's schema.
func parseWorkerTask(t *testing.T, content []byte) *node {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(content)))
	d.Strict = true
	d.CharsetReader = func(label string, r io.Reader) (io.Reader, error) {
		if !strings.EqualFold(label, "UTF-16") {
			t.Errorf("declared encoding %q, want UTF-16", label)
		}
		return r, nil
	}
	var root node
	if err := d.Decode(&root); err != nil {
		t.Fatalf("task XML: %v\n%s", err, content)
	}
	if root.XMLName.Local != "Task" || root.XMLName.Space != taskNS {
		t.Fatalf("root %v, want Task in %s", root.XMLName, taskNS)
	}
	checkWorkerSchema(t, &root)
	return &root
}

func TestWorkerSchtasksTask(t *testing.T) {
	special := "with space & <ampersand> \"q\""
	if runtime.GOOS == "windows" {
		special = "with space & ampersand (x)" // < > " are not allowed in a Windows name
	}
	for _, tc := range []struct {
		dir      string
		user     map[string]string
		wantUser string
	}{
		{"plain", nil, ""},
		{special, map[string]string{"USERNAME": "ana"}, "ana"},
		{"domain", map[string]string{"USERNAME": "ana", "USERDOMAIN": "LAB"}, `LAB\ana`},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			f, o := workerFixture(t, tc.dir, &WorkerOptions{Labels: []string{"win", "gpu"}, MaxParallel: 2})
			maps.Copy(f.env, tc.user)
			p := planWorker(t, Schtasks, o)
			rec := &recorder{}
			if err := Apply(context.Background(), p, rec.run); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(f.home, "AppData", "Local", "nightwatch", "schtasks", "nightwatch-nightly.worker.xml")
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != string(utf16LE(p.Files[0].Content)) || raw[0] != 0xFF || raw[1] != 0xFE {
				t.Fatalf("the file is not the plan's document as UTF-16LE with a BOM")
			}
			task := parseWorkerTask(t, p.Files[0].Content)
			if got := task.text(t, "RegistrationInfo", "URI"); got != `\nightwatch\nightly.worker` {
				t.Errorf("URI %q", got)
			}
			trig := task.get(t, "Triggers")
			if names := trig.names(); !reflect.DeepEqual(names, []string{"LogonTrigger"}) {
				t.Fatalf("triggers %q, want one LogonTrigger (no calendar: the worker runs all the time)", names)
			}
			logon := task.get(t, "Triggers", "LogonTrigger")
			if got := logon.text(t, "Enabled"); got != "true" {
				t.Errorf("LogonTrigger/Enabled %q", got)
			}
			if users := logon.all("UserId"); tc.wantUser == "" && len(users) != 0 || tc.wantUser != "" && (len(users) != 1 || strings.TrimSpace(users[0].Text) != tc.wantUser) {
				t.Errorf("LogonTrigger/UserId %v, want %q", users, tc.wantUser)
			}
			exec := task.get(t, "Actions", "Exec")
			if got := exec.text(t, "Command"); got != f.bin {
				t.Errorf("Command %q, want %q", got, f.bin)
			}
			wantArgs := []string{"worker", f.batch.File, "--label", "win", "--label", "gpu", "--max-parallel", "2"}
			if got := command.SplitCommandLine(exec.text(t, "Arguments")); !reflect.DeepEqual(got, wantArgs) {
				t.Errorf("Arguments read back as %q, want %q", got, wantArgs)
			}
			if got := exec.text(t, "WorkingDirectory"); got != f.batch.Dir {
				t.Errorf("WorkingDirectory %q", got)
			}
			for k, want := range map[string]string{
				"MultipleInstancesPolicy": "IgnoreNew", "ExecutionTimeLimit": "PT0S", "Enabled": "true",
				"DisallowStartIfOnBatteries": "false", "StopIfGoingOnBatteries": "false",
			} {
				if got := task.text(t, "Settings", k); got != want {
					t.Errorf("Settings/%s = %q, want %q", k, got, want)
				}
			}
			if got := task.text(t, "Settings", "RestartOnFailure", "Interval"); got != "PT1M" {
				t.Errorf("RestartOnFailure/Interval %q", got)
			}
			if got := task.text(t, "Settings", "RestartOnFailure", "Count"); got != "999" {
				t.Errorf("RestartOnFailure/Count %q", got)
			}
			if got := task.text(t, "Principals", "Principal", "LogonType"); got != "InteractiveToken" {
				t.Errorf("LogonType %q", got)
			}
			for _, v := range []string{f.env["API_KEY"], f.env["GITHUB_TOKEN"], f.env["GH_HOST"], "FAIL_OPEN"} {
				if strings.Contains(string(p.Files[0].Content), v) {
					t.Errorf("the task holds %q", v)
				}
			}
			name := `\nightwatch\nightly.worker`
			want := [][]string{
				{"schtasks", "/End", "/TN", name},
				{"schtasks", "/Create", "/XML", path, "/TN", name, "/F"},
				{"schtasks", "/Run", "/TN", name},
			}
			if !reflect.DeepEqual(rec.runs, want) {
				t.Errorf("commands %q, want %q", rec.runs, want)
			}
			if out := printed(p); !strings.Contains(out, "schtasks /Run /TN "+name) || !strings.Contains(out, "as UTF-16LE") {
				t.Errorf("dry run:\n%s", out)
			}
		})
	}
}

// The night's entry and the worker's live side by side; uninstalling the
// worker removes its entry and leaves the night's.
func TestWorkerUninstallLeavesTheNight(t *testing.T) {
	for _, tc := range []struct {
		kind                Kind
		night, worker       []string // files, under home
		wantPrepare, wantCm [][]string
	}{
		{
			Launchd,
			[]string{"Library/LaunchAgents/dev.nightwatch.nightly.plist"},
			[]string{"Library/LaunchAgents/dev.nightwatch.nightly.worker.plist"},
			[][]string{{"launchctl", "bootout", "gui/501/dev.nightwatch.nightly.worker"}}, nil,
		},
		{
			Systemd,
			[]string{".config/systemd/user/nightwatch-nightly.service", ".config/systemd/user/nightwatch-nightly.timer"},
			[]string{".config/systemd/user/nightwatch-nightly-worker.service"},
			[][]string{{"systemctl", "--user", "disable", "--now", "nightwatch-nightly-worker.service"}},
			[][]string{{"systemctl", "--user", "daemon-reload"}},
		},
		{
			Schtasks,
			[]string{"AppData/Local/nightwatch/schtasks/nightwatch-nightly.xml"},
			[]string{"AppData/Local/nightwatch/schtasks/nightwatch-nightly.worker.xml"},
			[][]string{{"schtasks", "/End", "/TN", `\nightwatch\nightly.worker`}, {"schtasks", "/Delete", "/TN", `\nightwatch\nightly.worker`, "/F"}},
			nil,
		},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			f, wo := workerFixture(t, "b", &WorkerOptions{Labels: []string{"x"}})
			no := wo
			no.Worker = nil
			ctx := context.Background()
			for _, o := range []Options{no, wo} {
				p, err := PlanInstall(tc.kind, o)
				if err != nil {
					t.Fatal(err)
				}
				if err := Apply(ctx, p, (&recorder{}).run); err != nil {
					t.Fatal(err)
				}
			}
			exists := func(rel string) bool {
				_, err := os.Stat(filepath.Join(f.home, filepath.FromSlash(rel)))
				return err == nil
			}
			for _, rel := range append(slices.Clone(tc.night), tc.worker...) {
				if !exists(rel) {
					t.Fatalf("%s not installed", rel)
				}
			}
			un, err := PlanUninstall(tc.kind, wo)
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			if err := ApplyUninstall(ctx, un, rec.run); err != nil {
				t.Fatal(err)
			}
			for _, rel := range tc.worker {
				if exists(rel) {
					t.Errorf("the worker's %s is still there", rel)
				}
			}
			for _, rel := range tc.night {
				if !exists(rel) {
					t.Errorf("uninstalling the worker removed the night's %s", rel)
				}
			}
			if want := append(slices.Clone(tc.wantPrepare), tc.wantCm...); !reflect.DeepEqual(rec.runs, want) {
				t.Errorf("commands %q, want %q", rec.runs, want)
			}
			// And the night's uninstall leaves the worker's entry.
			if err := Apply(ctx, planWorker(t, tc.kind, wo), (&recorder{}).run); err != nil {
				t.Fatal(err)
			}
			nun, err := PlanUninstall(tc.kind, no)
			if err != nil {
				t.Fatal(err)
			}
			if err := ApplyUninstall(ctx, nun, (&recorder{}).run); err != nil {
				t.Fatal(err)
			}
			for _, rel := range tc.worker {
				if !exists(rel) {
					t.Errorf("uninstalling the night removed the worker's %s", rel)
				}
			}
		})
	}
}

// A worker installed while the batch had a cluster: section can be removed
// after the section is gone.
func TestWorkerUninstallWithoutCluster(t *testing.T) {
	for _, kind := range Kinds {
		f := newFixture(t, "b")
		o := f.options()
		o.Worker = &WorkerOptions{}
		p, err := PlanUninstall(kind, o)
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		if out := printed(p); !strings.Contains(out, "worker") {
			t.Errorf("%s: the plan does not remove the worker's entry:\n%s", kind, out)
		}
	}
}

// The worker of "nightly" and the night of a batch "nightly-worker"
// (systemd) or "nightly.worker" (launchd, Task Scheduler) would share a
// file: the worker's install and uninstall refuse to touch that night.
func TestWorkerRefusesAnotherBatchsNight(t *testing.T) {
	for _, tc := range []struct {
		kind  Kind
		other string
	}{{Systemd, "nightly-worker"}, {Launchd, "nightly.worker"}, {Schtasks, "nightly.worker"}} {
		t.Run(string(tc.kind), func(t *testing.T) {
			f, o := workerFixture(t, "b", &WorkerOptions{})
			// The other batch's night, installed first.
			f.batch.Name = tc.other
			night := f.plan(t, tc.kind)
			if err := Apply(context.Background(), night, (&recorder{}).run); err != nil {
				t.Fatal(err)
			}
			f.batch.Name = "nightly"
			if _, err := PlanInstall(tc.kind, o); err == nil || !strings.Contains(err.Error(), "night of another batch") || !strings.Contains(err.Error(), night.Files[0].Path) {
				t.Errorf("install over %s's night: err = %v", tc.other, err)
			}
			if _, err := PlanUninstall(tc.kind, o); err == nil || !strings.Contains(err.Error(), "night of another batch") {
				t.Errorf("uninstall of %s's night: err = %v", tc.other, err)
			}
			// The worker's own file is no night: a reinstall goes through.
			if err := os.Remove(night.Files[0].Path); err != nil {
				t.Fatal(err)
			}
			if err := Apply(context.Background(), planWorker(t, tc.kind, o), (&recorder{}).run); err != nil {
				t.Fatal(err)
			}
			planWorker(t, tc.kind, o)
			if _, err := PlanUninstall(tc.kind, o); err != nil {
				t.Errorf("uninstall of the worker's own entry: %v", err)
			}
		})
	}
}
