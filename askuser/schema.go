package askuser

import (
	"encoding/json"
	"fmt"

	"github.com/holdover-dev/holdover"
)

// jsonSchema is the subset of JSON Schema the tool's input needs. Property
// maps marshal with sorted keys, so a schema always encodes to the same bytes.
type jsonSchema struct {
	Type                 string                 `json:"type"`
	Description          string                 `json:"description,omitempty"`
	Properties           map[string]*jsonSchema `json:"properties,omitempty"`
	Required             []string               `json:"required,omitempty"`
	AdditionalProperties *bool                  `json:"additionalProperties,omitempty"`
	Items                *jsonSchema            `json:"items,omitempty"`
	MinItems             *int                   `json:"minItems,omitempty"`
	Minimum              *int64                 `json:"minimum,omitempty"`
	Maximum              *int64                 `json:"maximum,omitempty"`
	Enum                 []string               `json:"enum,omitempty"`
}

// object is a closed object schema: unknown properties are refused, as the
// tool's strict argument parsing refuses them.
func object(description string, props map[string]*jsonSchema, required ...string) *jsonSchema {
	closed := false
	return &jsonSchema{Type: "object", Description: description, Properties: props, Required: required, AdditionalProperties: &closed}
}

func str(description string) *jsonSchema {
	return &jsonSchema{Type: "string", Description: description}
}

// inputSchema is the JSON Schema of the tool's arguments. The timed schema
// adds a top-level timeout property; the projection recognises timed calls
// by exactly that property (D2), so its name and placement are protocol.
func inputSchema(timed bool, defaultTimeout int64) *jsonSchema {
	option := object("One choice the user can pick.", map[string]*jsonSchema{
		"label":       str(`What the user picks, shown and returned as written. End it with " (Recommended)" to suggest it.`),
		"description": str("What choosing this option means."),
	}, "label")
	question := object("One question.", map[string]*jsonSchema{
		"id":          str("Stable id of the question, unique within this call; its answer carries the same id."),
		"question":    str("The question, as a complete sentence."),
		"header":      str("A short label shown above the question."),
		"options":     {Type: "array", Description: "The choices offered; the user may also type a custom answer.", Items: option},
		"multiSelect": {Type: "boolean", Description: "Let the user pick more than one option."},
		"detail":      str("Markdown shown beside the question, such as the plan under review."),
	}, "id", "question")
	one := 1
	props := map[string]*jsonSchema{
		"questions": {Type: "array", Description: "The questions to ask, answered together as one batch.", Items: question, MinItems: &one},
		"intent": object(intentDescription(timed), map[string]*jsonSchema{
			"kind":    {Type: "string", Enum: []string{holdover.IntentPlanReview}},
			"approve": str("The option label that approves the plan."),
		}, "kind", "approve"),
	}
	if timed {
		lowest, highest := int64(holdover.BlockingTimeout), int64(holdover.MaxTimeoutSeconds)
		props["timeout"] = &jsonSchema{Type: "integer", Description: timeoutDescription(defaultTimeout), Minimum: &lowest, Maximum: &highest}
	}
	return object("", props, "questions")
}

func intentDescription(timed bool) string {
	const plan = "Only for plan review: ask one question whose detail is the plan and whose options include the approving label."
	if timed {
		return plan + " A plan review always waits until the user answers, so omit timeout or pass -1."
	}
	return plan
}

// timeoutDescription names the configured default, because the model decides
// whether to pass a timeout by reading it.
func timeoutDescription(defaultTimeout int64) string {
	def := fmt.Sprintf("default %d", defaultTimeout)
	if defaultTimeout == holdover.BlockingTimeout {
		def = "default -1, which waits until the user answers"
	}
	return fmt.Sprintf("Seconds to wait for the user's answers before the call returns pending (%s). "+
		"Omit it unless the user gave you a duration. "+
		"Use -1 only when an answer is required before you can proceed: the call then waits until the user answers.", def)
}

const legacyDescription = `Ask the user one or more structured questions and wait until they answer.
Each question has a stable id, unique within the call. The result is {"answers":[{"id","selected":[...],"custom"?}]}: one item per question, "selected" lists the chosen option labels exactly as written, and "custom" is text the user typed instead. A skipped question is an item with an empty "selected" and no "custom".`

const timedDescription = `Ask the user one or more structured questions. The call waits at most "timeout" seconds for the user's answers.
Each question has a stable id, unique within the call; answers name questions by that id, now and if they arrive later.
The result is exactly one of two JSON objects:
- {"answers":[{"id","selected":[...],"custom"?}]} when the user answered in time: one item per question, "selected" lists the chosen option labels exactly as written, and "custom" is text the user typed instead. A skipped question is an item with an empty "selected" and no "custom".
- {"pending":true,"callId":...,"message":...} when no answer batch arrived before the timeout. Pending is not a skipped answer and not permission: the user can still answer, and the answer then arrives later as a user message of kind "answer_to_pending_question" naming this call id. Meanwhile continue only with work that does not depend on the answer.`

// toolSchema encodes the schema the model is offered for a mode.
func toolSchema(timed bool, defaultTimeout int64) (description string, input json.RawMessage, err error) {
	input, err = json.Marshal(inputSchema(timed, defaultTimeout))
	if err != nil {
		return "", nil, holdover.Wrapf(err, holdover.CodeInternal, "encode the %s input schema", holdover.ToolName)
	}
	if timed {
		return timedDescription, input, nil
	}
	return legacyDescription, input, nil
}
