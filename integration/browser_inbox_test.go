package integration

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// browserAskRegion is a timed question asked after the first one went pending.
func browserAskRegion(timeout int) string {
	return fmt.Sprintf(`call ask_user_question {"questions":[{"id":"region","header":"Region","question":"Where should it run?","options":[{"label":"eu"},{"label":"us"}]}],"timeout":%d}`, timeout)
}

// browserInboxItems is the inbox as the page lists it: "session/state/when" per item, in order.
const browserInboxItems = `[...document.querySelectorAll(".inbox-item")].map((li) => li.dataset.session + "/" + li.className.replace("inbox-item state-", "") + "/" + li.querySelector(".when").textContent)`

func TestBrowserInboxListsEveryGrantedSessionsQuestionsMostUrgentFirstAndOpensTheCard(t *testing.T) {
	// Issue 13 items 1, 2, 6, 8: the page without ?session= lists the questions of every Session
	// the token grants, live waits first by time left, then continued ones; the title and the
	// favicon carry the count; it fits a phone; opening one goes to its card.
	t.Parallel()
	w := newBrowserWorld(t, browserAskDB(2)+"\n"+browserAskRegion(600)+"\n"+browserSayMovedOn)
	p := w.openURL(w.gw.inboxURL(), "inbox", false)
	p.waitFor("the empty inbox", browserText(`.inbox .hint`)+`?.startsWith("No question is waiting")`)
	require.Equal(t, "Holdover", p.str(`document.title`))
	p.accessible("empty inbox")

	sids := []string{"s-inbox-a", "s-inbox-b", "s-inbox-c"}
	for _, sid := range sids {
		w.start(w.ctx, sid, "Set up the service")
		// Each Session's first question goes pending (nobody claims it from an inbox) before the next starts,
		// so the live waits' deadlines come in the order the Sessions started.
		p.waitFor(sid+"'s second question with its time left", `[...document.querySelectorAll('.inbox-item[data-session="`+sid+`"].state-open')].some(e =>
			e.querySelector(".q-text")?.textContent.includes("Where should it run?") && e.querySelector(".when")?.textContent.startsWith("Continuing in"))`)
	}
	p.waitFor("six questions", `document.querySelectorAll(".inbox-item").length === 6`)
	var items []string
	p.eval(browserInboxItems, &items)
	require.Len(t, items, 6)
	for i, sid := range sids {
		require.Regexp(t, `^`+sid+`/open/Continuing in \d+s$`, items[i], "live waits first, the soonest deadline first: %v", items)
		require.Equal(t, sid+"/continued/Work continued · answer still available", items[3+i], "then continued questions: %v", items)
	}
	require.Equal(t, "6 questions waiting in 3 Sessions", p.str(browserText(`.inbox .facts`)))
	p.waitFor("the title badge", `document.title === "(6) Holdover" && document.querySelector('link[rel="icon"]').getAttribute("href") === "icon-6.svg"`)
	p.shot("inbox")
	p.accessible("inbox")

	p.phone()
	p.waitFor("the phone layout", `document.documentElement.clientWidth === 390`)
	p.fitsPhone("inbox")
	p.shot("inbox-phone")

	// Opening the first goes to its card on the page watching its Session.
	p.click(`.inbox-item:first-child .open-card`)
	p.waitAcross("the Session's page", `location.search === "?session=s-inbox-a" && location.hash.startsWith("#/s/s-inbox-a/c/")`)
	p.waitFor("the open card", browserQuery(browserCard+`[data-channel="waterfall"]`)+` !== null && `+browserText(browserCard+` .q-text`)+` === "Where should it run?"`)
	p.waitFor("the Session's count", `document.title === "(2) Holdover"`)
	p.fitsPhone("open card")
	p.shot("open-card-phone")
	p.accessible("open card")

	// The continued question's card, from the row.
	p.click(`.question-row[data-state="continued"] .action-answer`)
	p.waitFor("the continued card", browserQuery(browserCard+`[data-channel="rpc"]`)+` !== null`)
	p.fitsPhone("continued card")
	p.shot("continued-card-phone")
	p.accessible("continued card")

	// Answered on the phone: the late answer goes through and the card closes.
	p.click(browserCard + ` .option:nth-of-type(2)`) // SQLite
	p.click(browserCard + ` .submit`)
	p.waitFor("the card to close after the accepted answer", browserQuery(browserCard+`[data-channel="rpc"]`)+` === null`)
}
