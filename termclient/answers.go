package termclient

import (
	"slices"
	"strconv"
	"strings"

	"github.com/holdover-dev/holdover"
)

// CustomPrefix marks free text ("Other") in flags, and in a typed line
// whose text would otherwise read as option numbers or a label.
const CustomPrefix = "custom:"

// ParseLine reads one typed answer to q:
//
//	""                  skips the question (empty selection, no text, M5)
//	"2" or "1,3"        chooses options by number; several only for multi-select
//	an option's label   chooses it (any letter case); several comma-separated for multi-select
//	"custom:text"       answers with the text, whatever it looks like
//	anything else       answers with the text as written ("Other")
//
// A line of numbers that are not all options is an error, not free text:
// it is far more likely a typo than an answer.
func ParseLine(q holdover.Question, line string) (holdover.Answer, error) {
	line = strings.TrimSpace(line)
	switch {
	case line == "":
		return skipped(q.ID), nil
	case strings.HasPrefix(line, CustomPrefix):
		return customAnswer(q.ID, strings.TrimPrefix(line, CustomPrefix))
	}
	if labels, ok, err := chooseOptions(q, line); ok || err != nil {
		return holdover.Answer{ID: q.ID, Selected: labels}, err
	}
	if len(q.Options) > 0 && numbersOnly(line) {
		return holdover.Answer{}, holdover.Newf(holdover.CodeBadAnswer, "%s is not an option of this question; choose 1-%d, or write %s%s for that text", line, len(q.Options), CustomPrefix, line)
	}
	return holdover.Answer{ID: q.ID, Selected: []string{}, Custom: line}, nil
}

// BatchFromFlags builds the answer batch for qs from --answer "id=value"
// and --skip "id" flags. A value is an option (its label, any letter case,
// or its number), several comma-separated for a multi-select question, or
// custom:text for free text; --answer may repeat for one question to add
// choices and text. Unlike a typed line, a value that is no option is an
// error: a script's typo must not become the user's answer. The batch
// names every question exactly once, in question order (D6).
func BatchFromFlags(qs []holdover.Question, answers, skips []string) ([]holdover.Answer, error) {
	byID := make(map[string]*holdover.Answer, len(qs))
	question := func(id string) (holdover.Question, error) {
		i := slices.IndexFunc(qs, func(q holdover.Question) bool { return q.ID == id })
		if i < 0 {
			return holdover.Question{}, holdover.Newf(holdover.CodeBadAnswer, "the call has no question %q; its questions are %s", id, questionIDs(qs))
		}
		return qs[i], nil
	}
	skippedIDs := make(map[string]bool, len(skips))
	for _, id := range skips {
		if _, err := question(id); err != nil {
			return nil, err
		}
		skippedIDs[id] = true
	}
	for _, spec := range answers {
		id, value, found := strings.Cut(spec, "=")
		if !found {
			return nil, holdover.Newf(holdover.CodeBadAnswer, "--answer %q names no question: write id=value", spec)
		}
		q, err := question(id)
		if err != nil {
			return nil, err
		}
		if skippedIDs[id] {
			return nil, holdover.Newf(holdover.CodeBadAnswer, "question %q is both answered and skipped", id)
		}
		a := byID[id]
		if a == nil {
			a = &holdover.Answer{ID: id, Selected: []string{}}
			byID[id] = a
		}
		if err := addFlagValue(q, a, value); err != nil {
			return nil, err
		}
	}
	batch := make([]holdover.Answer, 0, len(qs))
	for _, q := range qs {
		switch a := byID[q.ID]; {
		case a != nil:
			batch = append(batch, *a)
		case skippedIDs[q.ID]:
			batch = append(batch, skipped(q.ID))
		default:
			return nil, holdover.Newf(holdover.CodeBadAnswer, "question %q has no answer: give --answer '%s=…' or --skip %s", q.ID, q.ID, q.ID)
		}
	}
	return batch, nil
}

// addFlagValue adds one --answer value to a.
func addFlagValue(q holdover.Question, a *holdover.Answer, value string) error {
	if text, ok := strings.CutPrefix(value, CustomPrefix); ok {
		if a.Custom != "" {
			return holdover.Newf(holdover.CodeBadAnswer, "question %q has two custom answers", q.ID)
		}
		c, err := customAnswer(q.ID, text)
		a.Custom = c.Custom
		return err
	}
	labels, ok, err := chooseOptions(q, value)
	if err != nil {
		return err
	}
	if !ok {
		return holdover.Newf(holdover.CodeBadAnswer, "%q is not an option of question %q (%s); write %s%s for your own answer", value, q.ID, optionList(q), CustomPrefix, value)
	}
	for _, l := range labels {
		if !slices.Contains(a.Selected, l) {
			a.Selected = append(a.Selected, l)
		}
	}
	if !q.MultiSelect && len(a.Selected) > 1 {
		return holdover.Newf(holdover.CodeBadAnswer, "question %q takes one option, not %d", q.ID, len(a.Selected))
	}
	return nil
}

// BatchFromJSON reads an answer batch {"answers":[…]} and checks that it
// names every question of qs exactly once (D6).
func BatchFromJSON(qs []holdover.Question, data string) ([]holdover.Answer, error) {
	b, err := holdover.ParseBatch([]byte(data))
	if err != nil {
		return nil, err
	}
	if err := holdover.ValidateBatch(qs, b.Answers); err != nil {
		return nil, err
	}
	return b.Answers, nil
}

// chooseOptions reads value as options of q: one label or number, or a
// comma-separated list of them. ok is false when value is no such thing;
// err is set when it is, but the question cannot take that many.
func chooseOptions(q holdover.Question, value string) (labels []string, ok bool, err error) {
	if l, found := optionOf(q, value); found {
		return []string{l}, true, nil
	}
	for part := range strings.SplitSeq(value, ",") {
		l, found := optionOf(q, part)
		if !found {
			return nil, false, nil
		}
		if !slices.Contains(labels, l) {
			labels = append(labels, l)
		}
	}
	if !q.MultiSelect && len(labels) > 1 {
		return nil, true, holdover.Newf(holdover.CodeBadAnswer, "question %q takes one option, not %d", q.ID, len(labels))
	}
	return labels, true, nil
}

// optionOf finds the option that s names: its number (from 1), its exact
// label, or its label in another letter case.
func optionOf(q holdover.Question, s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", false
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n >= 1 && n <= len(q.Options) {
			return q.Options[n-1].Label, true
		}
		return "", false
	}
	for _, o := range q.Options {
		if o.Label == s {
			return o.Label, true
		}
	}
	for _, o := range q.Options {
		if strings.EqualFold(o.Label, s) {
			return o.Label, true
		}
	}
	return "", false
}

func numbersOnly(s string) bool {
	for part := range strings.SplitSeq(s, ",") {
		if _, err := strconv.Atoi(strings.TrimSpace(part)); err != nil {
			return false
		}
	}
	return true
}

func customAnswer(id, text string) (holdover.Answer, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return holdover.Answer{}, holdover.Newf(holdover.CodeBadAnswer, "%s needs text after it; to skip question %q, skip it", CustomPrefix, id)
	}
	return holdover.Answer{ID: id, Selected: []string{}, Custom: text}, nil
}

// skipped is a skipped answer: an empty selection and no text (M5).
func skipped(id string) holdover.Answer {
	return holdover.Answer{ID: id, Selected: []string{}}
}

func questionIDs(qs []holdover.Question) string {
	ids := make([]string, len(qs))
	for i, q := range qs {
		ids[i] = strconv.Quote(q.ID)
	}
	return strings.Join(ids, ", ")
}

func optionList(q holdover.Question) string {
	if len(q.Options) == 0 {
		return "it has no options"
	}
	labels := make([]string, len(q.Options))
	for i, o := range q.Options {
		labels[i] = strconv.Itoa(i+1) + " " + strconv.Quote(o.Label)
	}
	return "options: " + strings.Join(labels, ", ")
}
