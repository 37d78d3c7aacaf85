package faults

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

// Crash scenario size: 200 image updates (half Kubernetes mode, half Git
// mode) announced over 8 webhook services, and SIGKILLs at random
// moments.
const (
	crashKubeApps = 100
	crashGitApps  = 100
	crashHooks    = 8
	crashKills    = 5
	// crashMaxGap bounds the time between a start's /readyz 200 and the
	// SIGKILL that follows; the whole run takes about 15s without crashes.
	crashMaxGap = 3 * time.Second
)

// seed returns $FAULTS_SEED, or a fresh seed; either way it is logged and
// put in the report, so a failing run can be repeated.
func seed(t *testing.T) uint64 {
	t.Helper()
	if s := os.Getenv("FAULTS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("FAULTS_SEED=%q: want an unsigned integer: %v", s, err)
		}
		return v
	}
	return uint64(time.Now().UnixNano())
}

// crowsnest is SIGKILLed at random moments (seeded) during a run of 200
// image updates and their notifications, and started again each time, as
// a kubelet restarts a crashed container.
func TestCrashRestart(t *testing.T) {
	w := newWorld(t, "crash", worldOptions{kubeApps: crashKubeApps, gitApps: crashGitApps, repos: 10, hooks: crashHooks})
	c := crashAndRestart(t, w)
	// The bound docs/guarantees.md documents for a restart with its --state-dir: a
	// crash may repeat a message whose destination answered and whose
	// answer was not read yet (its send in flight), no more than the
	// outbox sends at once. The journal has every message whose answer
	// was read.
	bound := crashKills * outbox.DefaultMaxInFlight
	tl := finish(t, w, c.start, "crowsnest SIGKILLed and restarted", c.faults, bound, c.daemon)
	c.intentsNote(t)
	journaled := c.daemon.count(`"msg":"notification sent before a restart (local journal), recorded, not sent again"`)
	note("SIGKILL scenario: seed %d (rerun with FAULTS_SEED=%d); %d duplicate notifications against a bound of %d (%d kills x %d sends in flight), %d of them a delivery sent again under its own X-Crowsnest-Delivery ID (a receiver that drops a repeated ID sees none), %d under a new ID; %d messages sent before a crash and not recorded were found in the local journal after the restart and not sent again.",
		c.seed, c.seed, tl.notDup, bound, crashKills, bound/crashKills, tl.notAgain, tl.notTwice, journaled)
}

// The same crashes with the notifications going to Slack (the emulator,
// channels named by ID): a message posted before a crash and not recorded
// is found in the channel's history by its metadata after the restart and
// not posted again, so no message may arrive twice.
func TestCrashRestartSlack(t *testing.T) {
	chat := startChatSink(t)
	chat.byID, chat.perSecond = true, 50
	w := newWorld(t, "crash-slack", worldOptions{kubeApps: crashKubeApps, gitApps: crashGitApps, repos: 10, dest: chat})
	c := crashAndRestart(t, w)
	tl := finish(t, w, c.start, "crowsnest SIGKILLed and restarted, Slack", c.faults, 0, c.daemon)
	c.intentsNote(t)
	found := c.daemon.count(`"msg":"notification found at its destination after a restart, not sent again"`)
	note("SIGKILL scenario with Slack: seed %d (rerun with FAULTS_SEED=%d); %d duplicate messages; %d messages posted before a crash were found in their channel after the restart and not posted again.",
		c.seed, c.seed, tl.notDup, found)
}

// crashRun is a run SIGKILLed crashKills times and started again.
type crashRun struct {
	seed   uint64
	kills  []string
	start  time.Time
	daemon *daemon
}

func (c *crashRun) faults() string {
	return fmt.Sprintf("SIGKILL %d times, %s after each start was ready (seed %d), restarted each time", crashKills, strings.Join(c.kills, ", "), c.seed)
}

// intentsNote says how many write intents could not be recorded: such a
// write is not announced after a crash, which explains a run that lost
// messages.
func (c *crashRun) intentsNote(t *testing.T) {
	t.Helper()
	if n := c.daemon.count(`"msg":"recording the write intent failed`); n > 0 {
		t.Logf("%d write intents could not be recorded", n)
	}
}

// crashAndRestart starts crowsnest on w, SIGKILLs it at random moments
// (seeded) crashKills times, restarting it after each, and leaves the last
// start running.
func crashAndRestart(t *testing.T, w *world) *crashRun {
	t.Helper()
	s := seed(t)
	rng := rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15)) // reproducible test schedule, not security
	t.Logf("seed %d (FAULTS_SEED=%d repeats this schedule)", s, s)
	c := &crashRun{seed: s, start: time.Now(), daemon: w.daemon(t, "crowsnest")}
	for i := range crashKills {
		c.daemon.start(t)
		// Counted from readiness, so that the kills land in the work
		// however slow the machine is.
		c.daemon.waitReady(t)
		gap := time.Duration(rng.IntN(int(crashMaxGap/time.Millisecond))) * time.Millisecond
		time.Sleep(gap) // sleep-ok: fault timing: the kill lands a random time into the work
		c.daemon.kill(t)
		tl := w.measure(t)
		c.kills = append(c.kills, fmt.Sprintf("%.1fs", gap.Seconds()))
		t.Logf("SIGKILL %d after %s: %d/%d updates landed, %d/%d notifications delivered so far",
			i+1, gap.Round(time.Millisecond), tl.updLanded, tl.updIntended, tl.notDelivered, tl.notIntended)
	}
	c.daemon.start(t)
	return c
}
