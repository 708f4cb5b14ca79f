-- tools/Selection.lua - what the user has selected in Studio's Explorer.

local U = require(script.Parent.Util)

local T = {}

T.get_selection = {
	readOnly = true,
	run = function(args, ctx)
		local limit = U.int(args, "limit", 200, 1, 2000)
		local sel = U.svc(ctx, "Selection"):Get()
		local out = {}
		for i = 1, math.min(#sel, limit) do
			out[i] = U.describe(sel[i])
		end
		return { selection = out, count = #sel, truncated = #sel > limit }
	end,
}

return T
