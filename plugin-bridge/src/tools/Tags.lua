-- tools/Tags.lua - CollectionService tags on instances.

local Paths = require(script.Parent.Parent.Paths)
local U = require(script.Parent.Util)
local Paging = require(script.Parent.Paging)

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
		local pager = Paging.new(U, args, 200, 2000)
		for _, inst in ipairs(U.svc(ctx, "CollectionService"):GetTagged(tag)) do
			pager:add(function()
				return U.describe(inst)
			end)
		end
		return pager:finish({ tag = tag }, "instances", "tagged instances")
	end,
}

return T
