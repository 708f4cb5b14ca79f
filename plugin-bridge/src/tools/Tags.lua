-- tools/Tags.lua - CollectionService tags on instances.

local Paths = require(script.Parent.Parent.Paths)
local U = require(script.Parent.Util)

local function tagArg(args)
	local tag = U.str(args, "tag")
	if tag == "" then
		error("tag must not be empty", 0)
	end
	return tag
end

local T = {}

T.get_tags = {
	readOnly = true,
	run = function(args, ctx)
		local inst = U.resolve(ctx, U.str(args, "path"))
		return { path = Paths.format(inst), tags = U.svc(ctx, "CollectionService"):GetTags(inst) }
	end,
}

T.add_tag = {
	readOnly = false,
	run = function(args, ctx)
		local inst = U.resolve(ctx, U.str(args, "path"))
		local tag = tagArg(args)
		local cs = U.svc(ctx, "CollectionService")
		local had = cs:HasTag(inst, tag)
		cs:AddTag(inst, tag)
		return { path = Paths.format(inst), tag = tag, added = not had, tags = cs:GetTags(inst) }
	end,
}

T.remove_tag = {
	readOnly = false,
	run = function(args, ctx)
		local inst = U.resolve(ctx, U.str(args, "path"))
		local tag = tagArg(args)
		local cs = U.svc(ctx, "CollectionService")
		local had = cs:HasTag(inst, tag)
		cs:RemoveTag(inst, tag)
		return { path = Paths.format(inst), tag = tag, removed = had, tags = cs:GetTags(inst) }
	end,
}

T.get_tagged = {
	readOnly = true,
	run = function(args, ctx)
		local tag = tagArg(args)
		local limit = U.int(args, "limit", 200, 1, 2000)
		local all = U.svc(ctx, "CollectionService"):GetTagged(tag)
		local out = {}
		for i = 1, math.min(#all, limit) do
			out[i] = U.describe(all[i])
		end
		local res = { tag = tag, instances = out, total = #all, truncated = #all > limit }
		if res.truncated then
			res.note = "showing " .. limit .. " of " .. #all .. "; raise limit (max 2000)"
		end
		return res
	end,
}

return T
