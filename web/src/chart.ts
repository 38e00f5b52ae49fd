//! The candle chart (TradingView Lightweight Charts, Apache-2.0; the page shows its
//! attribution). It draws what it is given: REST candles for a pair and interval, then each
//! candle the stream sends. The container's `data-interval` and `data-bars` say what is drawn.

import { CandlestickSeries, createChart, type IChartApi, type ISeriesApi, type UTCTimestamp } from "lightweight-charts";
import type { Candle } from "./api";

export class CandleChart {
  private readonly chart: IChartApi;
  private readonly series: ISeriesApi<"Candlestick">;
  private bars = new Map<number, Candle>();

  constructor(private readonly container: HTMLElement) {
    this.chart = createChart(container, {
      autoSize: true,
      // The logo would be injected as markup with inline styles, which the page's content security
      // policy refuses; the attribution is the text and link under the chart instead.
      layout: { background: { color: "#0f1419" }, textColor: "#c9d1d9", attributionLogo: false },
      grid: { vertLines: { color: "#1c2430" }, horzLines: { color: "#1c2430" } },
      timeScale: { timeVisible: true, secondsVisible: false },
    });
    this.series = this.chart.addSeries(CandlestickSeries, {
      upColor: "#2ea043", downColor: "#f85149", borderVisible: false, wickUpColor: "#2ea043", wickDownColor: "#f85149",
    });
  }

  private point(candle: Candle) {
    return {
      time: (candle.openTime / 1000) as UTCTimestamp,
      open: Number(candle.open), high: Number(candle.high), low: Number(candle.low), close: Number(candle.close),
    };
  }

  /** Replaces everything drawn. */
  set(interval: string, candles: Candle[]): void {
    this.bars = new Map(candles.map((candle) => [candle.openTime, candle]));
    this.series.setData([...this.bars.values()].sort((a, b) => a.openTime - b.openTime).map((candle) => this.point(candle)));
    this.chart.timeScale().fitContent();
    this.container.dataset.interval = interval;
    this.container.dataset.bars = String(this.bars.size);
  }

  /** A candle from the stream: the current one changed, or a new one began. */
  update(candle: Candle): void {
    const newest = Math.max(0, ...this.bars.keys());
    if (candle.openTime < newest) return; // older than what is drawn: the chart cannot go back
    this.bars.set(candle.openTime, candle);
    this.series.update(this.point(candle));
    this.container.dataset.bars = String(this.bars.size);
  }
}
