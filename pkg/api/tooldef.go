package api

import "github.com/lambent/lambent/pkg/tooldef"

// ToolDefinition is a tool as the model sees it (tooldef.ToolDefinition,
// which tool Lambdas import without this package).
type ToolDefinition = tooldef.ToolDefinition

// MCPTool is one tool of an mcp_list_tools item, as the MCP server
// described it (tooldef.MCPTool).
type MCPTool = tooldef.MCPTool
