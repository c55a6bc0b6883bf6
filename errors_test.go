package holdover_test

import (
	"context"
	"io"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/holdover-dev/holdover"
)

func TestWrapKeepsTheCause(t *testing.T) {
	err := holdover.Wrapf(io.ErrUnexpectedEOF, holdover.CodeInternal, "read reservation %s", "s1.c1")
	require.Error(t, err)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, holdover.CodeInternal, holdover.CodeOf(err))
	assert.Equal(t, "read reservation s1.c1: unexpected EOF", err.Error())

	w := holdover.Wire(err)
	assert.Equal(t, holdover.CodeInternal, w.Code)
	assert.Equal(t, "read reservation s1.c1: unexpected EOF", w.Message)
}

func TestWrapOuterCodeWinsAndInnerStaysReachable(t *testing.T) {
	inner := holdover.New(holdover.CodeBadTimeout, "timeout 0 ms is outside 1..2147483647 ms")
	err := holdover.Wrap(inner, holdover.CodeBadRequest, "askTimed")
	assert.Equal(t, holdover.CodeBadRequest, holdover.CodeOf(err))
	assert.ErrorIs(t, err, &holdover.Error{Code: holdover.CodeBadTimeout})
	assert.ErrorIs(t, err, &holdover.Error{Code: holdover.CodeBadRequest})
}

func TestWrapWithoutCodeInheritsIt(t *testing.T) {
	inner := holdover.New(holdover.CodeReplyQueued, "a reply is queued")
	assert.Equal(t, holdover.CodeReplyQueued, holdover.CodeOf(holdover.Wrap(inner, "", "answer call c1")))
	assert.Equal(t, holdover.CodeInternal, holdover.CodeOf(holdover.Wrapf(context.Canceled, "", "publish %d", 1)))
	assert.ErrorIs(t, holdover.Wrapf(context.Canceled, "", "publish %d", 1), context.Canceled)
}

func TestWrapNil(t *testing.T) {
	assert.NoError(t, holdover.Wrap(nil, holdover.CodeInternal, "x"))
	assert.NoError(t, holdover.Wrapf(nil, holdover.CodeInternal, "x %d", 1))
}

func TestWrapCarriesAStack(t *testing.T) {
	err := holdover.Wrap(io.EOF, holdover.CodeInternal, "fetch")
	assert.NotNil(t, errors.GetReportableStackTrace(err), "the stack is where the wrap happened")
}
