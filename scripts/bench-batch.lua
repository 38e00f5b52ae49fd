-- wrk script of scripts/bench-batch: places orders through /order/batchOrders (BATCH_SIZE
-- orders per request) or /order/addOrder (BATCH_SIZE=1), each request for the next account of
-- ACCOUNTS_FILE (`key address` a line), with the account's privateKey. Even accounts buy and odd
-- accounts sell 0.01 ETH at 2500 USDC, so that the book stays small: what one side rests the
-- other takes. Every answer is read: a status other than 200, or a refused order inside a
-- batch's results, is counted and printed at the end, so a run that measured refusals shows it.

local batch_size = tonumber(os.getenv("BATCH_SIZE") or "20")
-- SYMBOL=NOPE/USDC (a pair the venue does not list) makes every request a 400 once it is read:
-- what HTTP, the body and its answer cost without signing, the engine or the journal (the
-- floor of scripts/bench-batch's FLOOR=1 runs).
local symbol = os.getenv("SYMBOL") or "ETH/USDC"
local accounts_file = os.getenv("ACCOUNTS_FILE") or "accounts.txt"
local threads = {}
local keys = {}
local next_account = 0
-- Globals, not locals: done() reads each thread's through thread:get.
failed_requests = 0
refused_orders = 0
placed_requests = 0

function setup(thread)
   thread:set("id", #threads)
   table.insert(threads, thread)
end

function init(args)
   for line in io.lines(accounts_file) do
      local key = line:match("^(0x%x+)")
      if key then table.insert(keys, key) end
   end
   next_account = id * 7919
end

local function order_fields(direction)
   return '"symbol":"' .. symbol .. '","type":"limit","direction":"' .. direction ..
      '","price":"2500","amount":"0.01"'
end

function request()
   next_account = next_account + 1
   local index = next_account % #keys
   local direction = (index % 2 == 0) and "buy" or "sell"
   local body
   local path
   if batch_size == 1 then
      path = "/order/addOrder"
      body = '{"chainId":"1","privateKey":"' .. keys[index + 1] .. '",' .. order_fields(direction) .. '}'
   else
      path = "/order/batchOrders"
      -- Each item its own clientOrderId: a batch signed once gives its orders one nonce, so two
      -- orders with every term equal would be one order (refused as such).
      local items = {}
      local tag = id .. "-" .. next_account .. "-"
      for i = 1, batch_size do
         items[i] = "{" .. order_fields(direction) .. ',"clientOrderId":"' .. tag .. i .. '"}'
      end
      body = '{"chainId":"1","privateKey":"' .. keys[index + 1] .. '","orders":[' ..
         table.concat(items, ",") .. ']}'
   end
   return wrk.format("POST", path, {["Content-Type"] = "application/json"}, body)
end

function response(status, headers, body)
   if status ~= 200 then
      failed_requests = failed_requests + 1
      return
   end
   placed_requests = placed_requests + 1
   local _, errors = body:gsub('"error":', "")
   refused_orders = refused_orders + errors
end

function done(summary, latency, requests)
   local failed, refused, placed = 0, 0, 0
   for _, thread in ipairs(threads) do
      failed = failed + thread:get("failed_requests")
      refused = refused + thread:get("refused_orders")
      placed = placed + thread:get("placed_requests")
   end
   local seconds = summary.duration / 1e6
   local orders = placed * batch_size - refused
   io.write(string.format("batch size %d: %d requests answered 200, %d not; %d orders refused inside batches\n",
      batch_size, placed, failed, refused))
   io.write(string.format("orders placed: %.0f/s (%d in %.1f s); latency p50 %.1f ms, p99 %.1f ms\n",
      orders / seconds, orders, seconds, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
