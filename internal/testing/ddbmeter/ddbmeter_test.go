package ddbmeter

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestItemSize: names and values count as DynamoDB counts them.
func TestItemSize(t *testing.T) {
	t.Parallel()
	item := map[string]types.AttributeValue{
		"pk":   &types.AttributeValueMemberS{Value: "acme#resp_1"},     // 2 + 11
		"size": &types.AttributeValueMemberN{Value: "12345"},           // 4 + 5 digits: 4
		"body": &types.AttributeValueMemberB{Value: make([]byte, 100)}, // 4 + 100
		"ok":   &types.AttributeValueMemberBOOL{Value: true},           // 2 + 1
		"tags": &types.AttributeValueMemberL{Value: []types.AttributeValue{ // 4 + 3 + (1+1) + (1+2)
			&types.AttributeValueMemberS{Value: "a"}, &types.AttributeValueMemberN{Value: "7"}}},
	}
	if got, want := ItemSize(item), 13+8+104+3+12; got != want {
		t.Errorf("ItemSize = %d, want %d", got, want)
	}
}

// TestFigures: Sub is what happened between two snapshots; Ops and
// Requests describe the calls.
func TestFigures(t *testing.T) {
	t.Parallel()
	a := Figures{Calls: map[string]int{"GetItem": 1}, Attempts: map[string]int{"GetItem": 1}, RCU: 1}
	b := Figures{Calls: map[string]int{"GetItem": 3, "PutItem": 2}, Attempts: map[string]int{"GetItem": 3, "PutItem": 3}, WCU: 4, RCU: 2.5}
	d := b.Sub(a)
	if d.Requests() != 4 || d.Ops() != "GetItem 2, PutItem 2" || d.WCU != 4 || d.RCU != 1.5 || d.Attempts["PutItem"] != 3 {
		t.Errorf("b - a = %+v (%s)", d, d.Ops())
	}
}
